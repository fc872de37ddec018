"""Replay one policy: build its world in a temporary directory, run the trace through it, read the figures."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gpubot.db import outbox
from gpubot.domain.replay_report import PolicyFigures
from gpubot.domain.replay_trace import job_stretches
from gpubot.scheduling.replay.clock import VirtualClock
from gpubot.scheduling.replay.figures import collect
from gpubot.scheduling.replay.notifier import ReplayNotifier
from gpubot.scheduling.replay.pieces import Piece
from gpubot.scheduling.replay.runner import Replay, ReplayInput
from gpubot.scheduling.replay.setup import replay_config
from gpubot.scheduling.replay.world import build_engine

__all__ = ["ReplayOutcome", "replay_policy"]


@dataclass(frozen=True)
class ReplayOutcome:
    """A policy's figures, every piece of work with how it ended, and what would have been sent."""

    figures: PolicyFigures
    pieces: list[Piece]
    messages: dict[str, int]


def replay_policy(document: Mapping, name: str, trace: ReplayInput,
                  on_job: Callable[[], None] | None = None) -> ReplayOutcome:
    """Replay `trace` under policy `name` of the config `document` (raw TOML, `[replay]` included); `on_job` is
    called as each of the trace's jobs is first submitted (a progress bar counts them)."""
    policy, settings = replay_config(document, name)
    stretches = job_stretches(trace.jobs, trace.util, policy.idle.util_below, settings.seed)
    clock = VirtualClock(settings.start)
    with tempfile.TemporaryDirectory(prefix="gpubot-replay-") as directory:
        engine = build_engine(policy, clock, Path(directory))
        try:
            started = time.perf_counter()
            pieces = Replay(engine, clock, settings, trace.jobs, stretches, on_job=on_job).run()
            notifier = ReplayNotifier()
            with engine.db.session() as session:  # what it would have sent: read in one go, no delivery rounds
                for notice in outbox.owed_notices("slack", session=session):
                    notifier.deliver(notice)
            figures = collect(engine, name, pieces, settings.start, clock(),
                              notifier.counts["idle_reminder"], time.perf_counter() - started, settings)
        finally:
            engine.db.dispose()
    return ReplayOutcome(figures, pieces, dict(notifier.counts))
