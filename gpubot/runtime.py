"""Start and stop a gpubot process: serve HTTP at once (live), then migrate, reconcile and run the scheduler
(ready once they are done)."""

from __future__ import annotations

import logging
import socket
import threading

import uvicorn
from apscheduler.schedulers.background import BackgroundScheduler

from gpubot.health import Health
from gpubot.metrics import Metrics
from gpubot.server import build_http_app
from gpubot.wiring import Wired, telemetry_sources
from scheduling.jobs import build_scheduler
from scheduling.leader import Leadership
from scheduling.reconcile import reconcile

__all__ = ["Runtime", "StartupFailed"]

log = logging.getLogger(__name__)


class StartupFailed(Exception):
    """Migration or the first reconcile failed: the process stops with this one line."""


class Runtime:
    """One running gpubot: the database at head, a reconcile pass, the scheduler, and the HTTP app."""

    def __init__(self, wired: Wired) -> None:
        self.wired = wired
        self.metrics = Metrics(wired.engine)
        self.leadership = Leadership(wired.db)
        self.scheduler: BackgroundScheduler | None = None
        self.health = Health(wired.db, self.scheduler_running)
        self.failure: BaseException | None = None

    def start_background(self) -> None:
        """Migrate, reconcile once, start the scheduler; then the process is ready."""
        self.wired.db.upgrade()
        if not self.wired.db.is_postgres:  # one process owns SQLite: settle everything before serving commands
            report = reconcile(self.wired.engine, exclusive=True)
            log.info("start-up reconcile: kept %d, adopted %d, orphans %d, requeued %d", report.kept,
                     report.adopted, len(report.orphans), len(report.requeued))
        self.scheduler = build_scheduler(self.wired.engine, self.leadership, telemetry_sources(self.wired.settings))
        self.scheduler.start()
        self.health.started.set()

    def scheduler_running(self) -> bool:
        """True while the scheduler thread runs."""
        return bool(self.scheduler and self.scheduler.running)

    def http_app(self):
        """The ASGI app."""
        return build_http_app(self.wired, self.metrics, self.health)

    def serve(self, listening: socket.socket) -> None:
        """Serve HTTP on an already bound socket until interrupted; start-up runs beside it (live before ready).

        Raises StartupFailed when migration or the first reconcile failed (the server is stopped then)."""
        server = uvicorn.Server(uvicorn.Config(self.http_app(), log_level="warning", access_log=False))

        def start() -> None:
            try:
                self.start_background()
            except Exception as exc:  # reported by serve() as one line once the server is down
                self.failure = exc
                server.should_exit = True

        threading.Thread(target=start, name="gpubot-start-up", daemon=True).start()
        try:
            server.run(sockets=[listening])
        finally:
            self.stop()
        if self.failure is not None:
            raise StartupFailed(_one_line(self.failure)) from None

    def stop(self) -> None:
        """Stop the scheduler and close connections."""
        if self.scheduler and self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        self.leadership.release()
        self.wired.db.dispose()


def _one_line(exc: BaseException) -> str:
    """The first line of an error, without SQLAlchemy's background links and the SQL it ran."""
    cause = getattr(exc, "orig", None) or exc
    text = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    return f"{type(cause).__name__}: {text}"
