"""Every periodic job, registered in one place. Jobs hold no policy: each is one call into the engine."""

from __future__ import annotations

import logging
from collections.abc import Callable

from apscheduler.schedulers.background import BackgroundScheduler

from scheduling.engine import Engine
from scheduling.lifecycle import expire_due
from scheduling.queue import drain
from scheduling.reconcile import reconcile

__all__ = ["build_scheduler", "job_table"]

log = logging.getLogger(__name__)


def job_table(engine: Engine) -> dict[str, tuple[Callable[[], object], float]]:
    """Name → (one-line call into the engine, interval in seconds)."""
    tick = engine.policy.scheduler.tick.total_seconds()
    return {
        "queue_drain": (lambda: drain(engine), tick),
        "expiry": (lambda: expire_due(engine), tick),
        "reconcile": (lambda: reconcile(engine), engine.policy.scheduler.reconcile_every.total_seconds()),
    }


def build_scheduler(engine: Engine) -> BackgroundScheduler:
    """An APScheduler with every job: one instance each, coalesced after downtime, with jitter."""
    scheduler = BackgroundScheduler(timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1,
                                                                  "misfire_grace_time": 60})
    for name, (call, seconds) in job_table(engine).items():
        scheduler.add_job(_guarded(name, call), "interval", seconds=seconds, id=name, name=name,
                          jitter=max(0.0, min(seconds * 0.1, 5.0)))
    return scheduler


def _guarded(name: str, call: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        try:
            call()
        except Exception:
            log.exception("job %s failed; it will run again next tick", name)
    return run
