"""Durations as people write them: `30s`, `10m`, `6h`, `1d`, `2h30m`, `1.5h`."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

__all__ = ["Span", "format_duration", "parse_duration", "span"]

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


def N_(message: str) -> str:
    """Mark a message for the catalogs (it is translated where it is shown)."""
    return message


# Each unit as a reader's language writes it (`6h` in English; `6 小时` in Chinese, as the glossary has it).
_UNITS = ((N_("{n}d"), 86400), (N_("{n}h"), 3600), (N_("{n}m"), 60), (N_("{n}s"), 1))


def format_duration(value: timedelta, translate: Callable[[str], str] | None = None) -> str:
    """Render a timedelta compactly, its two largest units: `6h`, `2h30m`, `1d4h`, `45s`; with a catalog's
    `translate`, in the reader's words (`1 小时 57 分钟`), parts then spaced as that language writes them."""
    words = translate or (lambda message: message)
    total = int(value.total_seconds())
    if total <= 0:
        return words(N_("{n}s")).format(n=0)
    parts = []
    for unit, size in _UNITS:
        amount, total = divmod(total, size)
        if amount:
            parts.append(words(unit).format(n=amount))
    shown = parts[:2]
    return (" " if any(not part.isascii() for part in shown) else "").join(shown)


class Span(timedelta):
    """A duration in a message's values: it reads as people write it (`6h`) where the English template shows it,
    and the bot shows it in the reader's units (it is a timedelta: bot.replies.translated_error)."""

    def __format__(self, spec: str) -> str:
        return format_duration(self)

    def __str__(self) -> str:
        return format_duration(self)


def span(value: timedelta) -> Span:
    """`value` as a Span, for a refusal's values."""
    return Span(seconds=value.total_seconds())
