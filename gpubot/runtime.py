"""One gpubot process's work: migrate, reconcile, run the scheduler (then ready), and the HTTP app
(gpubot/serving.py serves it)."""

from __future__ import annotations

import logging
import threading
import time

from apscheduler.schedulers.background import BackgroundScheduler

from gpubot.health import Health
from gpubot.inbox import answer_unfinished
from gpubot.metrics import Metrics
from gpubot.push_limit import DiskGuard
from gpubot.scheduling.delivery import forget_claims, run_deliveries
from gpubot.scheduling.jobs import build_scheduler
from gpubot.scheduling.leader import Leadership
from gpubot.scheduling.lifecycle.reconcile import reconcile
from gpubot.scheduling.reach import watch
from gpubot.server import build_http_app
from gpubot.slack_auth import SlackAuth
from gpubot.wiring import Wired, telemetry_sources

__all__ = ["Runtime"]

log = logging.getLogger(__name__)


class Runtime:
    """One running gpubot: the database at head, a reconcile pass, the scheduler, and the HTTP app."""

    def __init__(self, wired: Wired) -> None:
        self.wired = wired
        self.metrics = Metrics(wired.engine)
        self.leadership = Leadership(wired.db)
        self.scheduler: BackgroundScheduler | None = None
        self.reach = watch(wired.engine.providers, wired.engine.now)  # every provider call's outcome counts
        disk = DiskGuard(wired.db.url, lambda: wired.engine.policy.retention.min_free_disk_mb)
        self.health = Health(wired.db, self.scheduler_running, self.reach, SlackAuth(wired.app), disk)
        self.failure: BaseException | None = None
        self._stop_deliveries = threading.Event()
        self._deliveries: threading.Thread | None = None

    def start_background(self) -> None:
        """Migrate, reconcile once, start the scheduler; then the process is ready."""
        self._migrate()
        # One process owns SQLite: settle everything before serving commands. Replicas sharing PostgreSQL cannot
        # tell a dead replica's inbox rows or outbox claims from a live one's, so they leave both to their leases.
        if not self.wired.db.is_postgres:
            answer_unfinished(self.wired.db)
            forget_claims(self.wired.engine)
            report = reconcile(self.wired.engine, exclusive=True)
            log.info("start-up reconcile: kept %d, adopted %d, orphans %d, requeued %d", report.kept,
                     report.adopted, len(report.orphans), len(report.requeued))
        self.scheduler = build_scheduler(self.wired.engine, self.leadership, telemetry_sources(self.wired.settings))
        self.scheduler.start()
        self.start_deliveries()
        self.health.started.set()

    def _migrate(self) -> None:
        """Bring the database to the newest schema, saying so in one line (alembic's own lines are quiet)."""
        from gpubot.ledger_check import schema_state

        before = schema_state(self.wired.db.url).revision
        self.wired.db.upgrade()
        after = schema_state(self.wired.db.url).revision
        log.info("database at migration %s%s", after,
                 " (the newest)" if before == after else f" (migrated from {before or 'an empty database'})")

    def start_deliveries(self) -> None:
        """Start the outbox's delivery worker, apart from the scheduler: jobs never wait for Slack."""
        self._stop_deliveries.clear()
        self._deliveries = threading.Thread(target=run_deliveries, name="gpubot-deliveries", daemon=True,
                                            args=(self.wired.engine, self.wired.channels(), self._stop_deliveries))
        self._deliveries.start()

    def scheduler_running(self) -> bool:
        """True while the scheduler thread runs."""
        return bool(self.scheduler and self.scheduler.running)

    def http_app(self):
        """The ASGI app."""
        self._app = build_http_app(self.wired, self.metrics, self.health)
        return self._app

    def stop(self, within: float = 15.0) -> list[str]:
        """Stop the scheduler, let the inbox's commands and the delivery worker finish within `within` seconds,
        and close connections; what did not finish in time (an unfinished inbox row is answered at next start,
        an undelivered notice stays owed in the outbox)."""
        deadline = time.monotonic() + within
        if self.scheduler and self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        self._stop_deliveries.set()
        unfinished = []
        pool = getattr(getattr(self, "_app", None), "state", None)
        pool = getattr(pool, "inbox_pool", None) if pool is not None else None
        if pool is not None:
            draining = threading.Thread(target=pool.shutdown, kwargs={"wait": True}, name="gpubot-inbox-drain",
                                        daemon=True)
            draining.start()
            draining.join(timeout=max(0.0, deadline - time.monotonic()))
            unfinished += ["inbox"] if draining.is_alive() else []
        if self._deliveries is not None:
            self._deliveries.join(timeout=max(0.0, deadline - time.monotonic()))
            unfinished += ["deliveries"] if self._deliveries.is_alive() else []
        if self.health.slack_auth is not None:  # a look at the token in flight logs nothing after "stopped"
            self.health.slack_auth.settle(max(0.0, deadline - time.monotonic()))
        self.leadership.release()
        self.wired.db.dispose()
        return unfinished

