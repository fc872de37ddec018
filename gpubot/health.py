"""Liveness and readiness: /livez says the process answers; /readyz says it can do its work (the database
reachable and writable, migrations at head, start-up done, the scheduler running, some provider answering, Slack
accepting the bot token, a SQLite ledger's disk above `retention.min_free_disk_mb`) and names the providers whose
last call failed; a failed check with more to say than False gives its reason."""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqlalchemy import text

from gpubot.db import revisions
from gpubot.db.database import Database
from gpubot.push_limit import DiskGuard
from gpubot.scheduling.reach import Reach
from gpubot.slack_auth import SlackAuth

__all__ = ["Health"]


class Health:
    """What /livez and /readyz report; `started` is set once migration and the first reconcile are done."""

    def __init__(self, db: Database, scheduler_running: Callable[[], bool], reach: Reach | None = None,
                 slack_auth: SlackAuth | None = None, disk: DiskGuard | None = None) -> None:
        self.db = db
        self.scheduler_running = scheduler_running
        self.reach = reach
        self.slack_auth = slack_auth
        self.disk = disk  # the guard telemetry is refused by: one look at the disk serves both
        self.started = threading.Event()
        self._problems: dict[str, str] = {}

    def _database(self) -> tuple[bool, bool]:
        """(writable, at head): a no-op update of alembic_version, rolled back, proves writes go through."""
        try:
            with self.db.engine.connect() as conn, conn.begin() as transaction:
                version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
                conn.execute(text("UPDATE alembic_version SET version_num = version_num"))
                transaction.rollback()
            return True, version == revisions.head()
        except Exception:  # any driver error: not ready, and /readyz says which part failed
            return False, False

    def readiness(self) -> dict[str, bool]:
        """Each readiness check by name (all True when ready)."""
        started = self.started.is_set()
        writable, at_head = self._database() if started else (False, False)
        checks = {"started": started, "database": writable, "migrations": at_head,
                  "scheduler": started and self.scheduler_running(),
                  "providers": self.reach is None or self.reach.can_book()}
        problems = {}
        if self.slack_auth is not None:  # only a token Slack refuses for good: an outage of Slack is not ours
            problems["slack"] = self.slack_auth.problem()
        if self.disk is not None and self.disk.folder is not None:  # a PostgreSQL ledger's disk is not seen here
            problems["disk"] = self.disk.problem()
        checks.update({name: problem is None for name, problem in problems.items()})
        self._problems = {name: problem for name, problem in problems.items() if problem}
        return checks

    def providers_down(self) -> dict[str, str]:
        """The providers whose last call failed, and why (/readyz lists them even while ready)."""
        return self.reach.down() if self.reach else {}

    def reasons(self) -> dict[str, str]:
        """Why a check `readiness` just made failed, where there is more to say than False."""
        return dict(self._problems)
