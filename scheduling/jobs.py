"""Every periodic job, registered in one place. Jobs hold no policy: each is one call into the engine.

Every replica runs the scheduler, but only the leader (see scheduling/leader.py) runs the jobs; the others
only keep trying to take the lead. State lives in the database, so a job missed while down runs once on the
next start (APScheduler coalesces, and each job first runs right after start).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from apscheduler.schedulers.background import BackgroundScheduler
from gpubot.db.faults import log_failure
from gpubot.scheduling.acquisition.booting import follow_booting
from gpubot.scheduling.acquisition.queue import drain
from gpubot.scheduling.desk.replace import release_replaced
from gpubot.scheduling.desk.watch import watch_round
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.leader import Leadership
from gpubot.scheduling.lifecycle.cost_check import check_provider_costs
from gpubot.scheduling.lifecycle.expiry import expire_due, warn_expiring
from gpubot.scheduling.lifecycle.health import check_health
from gpubot.scheduling.lifecycle.housekeeping import housekeep
from gpubot.scheduling.lifecycle.idle import check_idle
from gpubot.scheduling.lifecycle.reconcile import reconcile
from gpubot.scheduling.lifecycle.telemetry import TelemetrySource, pull_telemetry
from gpubot.scheduling.metrics import JOB_RUNS, SCHEDULER_LEADER
from gpubot.scheduling.money.budget_alerts import check_budgets
from gpubot.scheduling.money.digest import run_digest

__all__ = ["build_scheduler", "job_table"]

log = logging.getLogger(__name__)

LEADER_REFRESH_SECONDS = 5.0
HOUSEKEEPING_EVERY = 600.0  # seconds; each run deletes a bounded number of rows, so a backlog takes a few runs


def job_table(engine: Engine, sources: list[TelemetrySource] | None = None
              ) -> dict[str, tuple[Callable[[], object], float]]:
    """Name → (one-line call into the engine, interval in seconds)."""
    tick = engine.policy.scheduler.tick.total_seconds()
    return {
        "queue_drain": (lambda: drain(engine), tick),
        "boot_follow": (lambda: follow_booting(engine), tick),
        "availability": (lambda: watch_round(engine), engine.policy.acquire.poll_every.total_seconds()),
        "expiry_warnings": (lambda: warn_expiring(engine), tick),
        "expiry": (lambda: expire_due(engine), tick),
        "telemetry_pull": (lambda: pull_telemetry(engine, sources), tick),
        "idle_check": (lambda: check_idle(engine), tick),
        "health_check": (lambda: check_health(engine), tick),
        "replace_check": (lambda: release_replaced(engine), tick),
        "reconcile": (lambda: reconcile(engine), engine.policy.scheduler.reconcile_every.total_seconds()),
        "budget_check": (lambda: check_budgets(engine), max(tick, 60.0)),
        "cost_check": (lambda: check_provider_costs(engine), engine.policy.scheduler.reconcile_every.total_seconds()),
        "digest": (lambda: run_digest(engine), tick),
        "housekeeping": (lambda: housekeep(engine), max(tick, HOUSEKEEPING_EVERY)),
    }


def build_scheduler(engine: Engine, leadership: Leadership, sources: list[TelemetrySource] | None = None
                    ) -> BackgroundScheduler:
    """An APScheduler with every job: one instance each, coalesced after downtime, with jitter."""
    scheduler = BackgroundScheduler(timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1,
                                                                  "misfire_grace_time": 60})
    scheduler.add_job(lambda: _refresh(leadership), "interval", seconds=LEADER_REFRESH_SECONDS, id="leader",
                      next_run_time=datetime.now(UTC))
    for name, (call, seconds) in job_table(engine, sources).items():
        scheduler.add_job(_guarded(name, call, leadership), "interval", seconds=seconds, id=name, name=name,
                          jitter=max(0.0, min(seconds * 0.1, 5.0)), next_run_time=datetime.now(UTC))
    return scheduler


def _refresh(leadership: Leadership) -> None:
    SCHEDULER_LEADER.set(1 if leadership.refresh() else 0)


def _guarded(name: str, call: Callable[[], object], leadership: Leadership) -> Callable[[], None]:
    def run() -> None:
        if not leadership.is_leader:
            return
        try:
            call()
        except Exception as exc:
            JOB_RUNS.labels(name, "failed").inc()
            log_failure(log, exc, "job %s failed; it will run again next tick", name)
        else:
            JOB_RUNS.labels(name, "ok").inc()
    return run
