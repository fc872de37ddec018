"""The reliability suites: short by default (make test), full with GPUBOT_RELIABILITY=full (make reliability)."""

from __future__ import annotations

from pathlib import Path

from tests.reliability import figures


def pytest_terminal_summary(terminalreporter) -> None:
    """Print what every suite tried and what held."""
    lines = figures.recorded()
    if not lines:
        return
    mode = "full" if figures.FULL else "short"
    terminalreporter.section(f"reliability figures ({mode} run)")
    for suite, line in lines:
        terminalreporter.write_line(f"[{suite}] {line}")
    path = figures.write_artifact(Path(__file__).resolve().parents[2])
    terminalreporter.write_line(f"(also in {path})")
