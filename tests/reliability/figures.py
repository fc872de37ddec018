"""Figures the reliability suites measured, printed at the end of the pytest run and kept in test-artifacts/."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["FULL", "keep", "record", "recorded", "size", "write_artifact"]

FULL = os.environ.get("GPUBOT_RELIABILITY", "short").lower() == "full"
_LINES: list[tuple[str, str]] = []


def size(short: int, full: int) -> int:
    """How many trials (bookings…) to run: short in `make test`, full with GPUBOT_RELIABILITY=full."""
    return full if FULL else short


def record(suite: str, line: str) -> None:
    """Keep one figure line of a suite (and show it in the test's own output)."""
    keep(suite, line)
    print(f"[{suite}] {line}")


def keep(suite: str, line: str) -> None:
    """Keep a figure line measured here or by another test worker."""
    _LINES.append((suite, line))


def recorded() -> list[tuple[str, str]]:
    """Every figure line so far, in order."""
    return list(_LINES)


def write_artifact(root: Path) -> Path:
    """Write the figures to test-artifacts/reliability-<short|full>.txt."""
    path = root / "test-artifacts" / f"reliability-{'full' if FULL else 'short'}.txt"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(f"[{suite}] {line}\n" for suite, line in _LINES))
    return path
