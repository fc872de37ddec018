"""Leader election: exactly one replica runs the scheduled jobs.

On PostgreSQL the leader holds a session-level advisory lock on a dedicated connection. If the leader dies,
PostgreSQL drops its connection and with it the lock; another replica takes it at its next refresh (every few
seconds, well inside the 30 s promise). TCP keepalives bound the wait when the leader's host vanishes
silently. On SQLite there is only one process, which always leads.
"""

from __future__ import annotations

import logging
import threading

from gpubot.db.database import Database
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection

__all__ = ["LOCK_ID", "Leadership"]

log = logging.getLogger(__name__)

LOCK_ID = 0x67707562  # "gpub", mixed with the schema: each gpubot (schema) of a database elects its own leader
_LOCK_KEY = "(CAST(:id AS bigint) # hashtextextended(current_schema(), 0))"
_KEEPALIVE = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 3,
              "connect_timeout": 5}


class Leadership:
    """Whether this process leads; `refresh()` tries to become (or stay) leader."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._conn: Connection | None = None
        self._leader = not db.is_postgres
        self._lock = threading.Lock()
        self._engine = create_engine(db.url, connect_args=_KEEPALIVE) if db.is_postgres else None

    @property
    def is_leader(self) -> bool:
        """True while this process holds the lock (always on SQLite)."""
        return self._leader

    def refresh(self) -> bool:
        """Keep or try to take the lock; returns whether this process leads now."""
        if self._engine is None:
            return True
        with self._lock:
            try:
                self._leader = self._hold()
            except Exception as exc:
                log.warning("leader lock connection lost (%s); stepping down", type(exc).__name__)
                self._drop()
                self._leader = False
        return self._leader

    def _hold(self) -> bool:
        if self._conn is None:
            self._conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        if self._leader:
            self._conn.execute(text("SELECT 1"))
            return True
        taken = self._conn.execute(text(f"SELECT pg_try_advisory_lock{_LOCK_KEY}"), {"id": LOCK_ID}).scalar()
        if taken:
            log.info("this replica now leads the scheduler")
        return bool(taken)

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.invalidate()
            except Exception:
                log.debug("invalidating the leader connection failed", exc_info=True)
        self._conn = None

    def release(self) -> None:
        """Give the lock up (on shutdown)."""
        with self._lock:
            if self._conn is not None and self._leader:
                try:
                    self._conn.execute(text(f"SELECT pg_advisory_unlock{_LOCK_KEY}"), {"id": LOCK_ID})
                except Exception:
                    log.debug("unlock failed; the connection close releases it anyway", exc_info=True)
            if self._conn is not None:
                self._conn.close()
            self._conn, self._leader = None, not self.db.is_postgres
        if self._engine is not None:
            self._engine.dispose()
