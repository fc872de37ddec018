"""Durations as people write them: `30s`, `10m`, `6h`, `1d`, `2h30m`, `1.5h`."""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["format_duration", "parse_duration"]

_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])", re.IGNORECASE)
_WHOLE = re.compile(r"^(?:\s*\d+(?:\.\d+)?\s*[smhdw]\s*)+$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """Parse `2h30m`-style text into a timedelta; raise ValueError when it is not one."""
    cleaned = str(text).strip().lower()
    if not cleaned or not _WHOLE.match(cleaned):
        raise ValueError(f"not a duration: {text!r} (write it like 30s, 90m, 6h, 1d or 2h30m)")
    seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(cleaned))
    return timedelta(seconds=round(seconds))


def format_duration(value: timedelta) -> str:
    """Render a timedelta compactly: `6h`, `2h30m`, `1d4h`, `45s`."""
    total = int(value.total_seconds())
    if total <= 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        amount, total = divmod(total, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts[:2])
