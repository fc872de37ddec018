"""What the whole run prints at its end, gathered from every test worker (pytest-xdist runs tests in several
processes; each sends its figures back to the one that prints)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability import figures

_KEY = "reliability_figures"


def pytest_sessionfinish(session) -> None:
    """On a worker: hand the figures it recorded to the controller."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output[_KEY] = figures.recorded()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """On the controller: keep what a finished worker recorded."""
    for suite, line in getattr(node, "workeroutput", {}).get(_KEY, []):
        figures.keep(suite, line)


def pytest_terminal_summary(terminalreporter) -> None:
    """Print what every reliability suite tried and what held, and keep it in test-artifacts/."""
    lines = figures.recorded()
    if not lines:
        return
    mode = "full" if figures.FULL else "short"
    terminalreporter.section(f"reliability figures ({mode} run)")
    for suite, line in lines:
        terminalreporter.write_line(f"[{suite}] {line}")
    path = figures.write_artifact(Path(__file__).resolve().parents[1])
    terminalreporter.write_line(f"(also in {path})")
