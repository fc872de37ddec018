"""Liveness and readiness: /livez says the process answers; /readyz says it can do its work (the database
reachable and writable, migrations at head, start-up done, the scheduler running, some provider answering, Slack
accepting the bot token) and names the providers whose last call failed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cached_property

from alembic.script import ScriptDirectory
from sqlalchemy import text

from gpubot.db.database import Database, alembic_config
from gpubot.scheduling.reach import Reach
from gpubot.slack_auth import SlackAuth

__all__ = ["Health"]


class Health:
    """What /livez and /readyz report; `started` is set once migration and the first reconcile are done."""

    def __init__(self, db: Database, scheduler_running: Callable[[], bool], reach: Reach | None = None,
                 slack_auth: SlackAuth | None = None) -> None:
        self.db = db
        self.scheduler_running = scheduler_running
        self.reach = reach
        self.slack_auth = slack_auth
        self.started = threading.Event()
        self._slack_problem: str | None = None

    @cached_property
    def _head(self) -> str | None:
        return ScriptDirectory.from_config(alembic_config(self.db.url)).get_current_head()

    def _database(self) -> tuple[bool, bool]:
        """(writable, at head): a no-op update of alembic_version, rolled back, proves writes go through."""
        try:
            with self.db.engine.connect() as conn, conn.begin() as transaction:
                version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
                conn.execute(text("UPDATE alembic_version SET version_num = version_num"))
                transaction.rollback()
            return True, version == self._head
        except Exception:  # any driver error: not ready, and /readyz says which part failed
            return False, False

    def readiness(self) -> dict[str, bool]:
        """Each readiness check by name (all True when ready)."""
        started = self.started.is_set()
        writable, at_head = self._database() if started else (False, False)
        checks = {"started": started, "database": writable, "migrations": at_head,
                  "scheduler": started and self.scheduler_running(),
                  "providers": self.reach is None or self.reach.can_book()}
        if self.slack_auth is not None:  # only a token Slack refuses for good: an outage of Slack is not ours
            self._slack_problem = self.slack_auth.problem()
            checks["slack"] = self._slack_problem is None
        return checks

    def providers_down(self) -> dict[str, str]:
        """The providers whose last call failed, and why (/readyz lists them even while ready)."""
        return self.reach.down() if self.reach else {}

    def reasons(self) -> dict[str, str]:
        """Why a check `readiness` just made failed, where there is more to say than False."""
        return {"slack": self._slack_problem} if self._slack_problem else {}
