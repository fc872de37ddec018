"""Progress bars for long work on a terminal (replays, benchmarks), silent in CI and when output is piped."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

__all__ = ["interactive", "progress_bar"]


def interactive(stream=None) -> bool:
    """True on a terminal outside CI: where a progress bar helps rather than fills a log with escape codes."""
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("CI")


class _Rate(ProgressColumn):
    """`412 jobs/s` (or `…` until there is a rate)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        """The task's current rate."""
        return Text(f"{task.speed:,.0f} {self.unit}/s" if task.speed else "…", style="progress.data.speed")


def progress_bar(unit: str | None = "jobs", *, enabled: bool | None = None) -> Progress:
    """A Progress (use it as a context manager) with a spinner, description, bar, done/total, rate (per `unit`,
    none without one), elapsed and time left; disabled (prints nothing) unless stderr is a terminal outside CI."""
    on = interactive() if enabled is None else enabled
    rate = [_Rate(unit)] if unit else []
    return Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    *rate, TimeElapsedColumn(), TextColumn("·"), TimeRemainingColumn(), TextColumn("left"),
                    console=Console(stderr=True), disable=not on, transient=False)
