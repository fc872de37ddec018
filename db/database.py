"""Database engine and sessions: SQLite (WAL, foreign keys on) or PostgreSQL, migrated with Alembic.

The inbox (signed Slack commands, recorded before their ack) lives in the ledger on PostgreSQL; on a SQLite file
it has a file of its own beside the ledger (`gpubot.db` → `gpubot.inbox.db`), because SQLite has one writer per
file: in the ledger, the ack's INSERT waited for the booking work's write lock, sleeping in SQLite's busy handler
(P1: 136 ms at p50, 1.7 s at p99, of a 173 ms ack)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from gpubot.db import revisions
from gpubot.db.tables.delivery import InboxRow
from sqlalchemy import event, text
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, create_engine

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["Database", "alembic_config", "inbox_url", "upgrade"]

_MIGRATIONS = Path(__file__).with_name("migrations")


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # Let SQLAlchemy, not pysqlite, issue BEGIN, so SAVEPOINTs (once-only claims) behave.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_engine(url: str, *, single_statements: bool = False) -> Engine:
    """An engine for the URL; SQLite connections get WAL, foreign keys and a busy timeout. With
    `single_statements` (the inbox: every transaction there is one statement) SQLite runs each statement in its
    own implicit transaction: no BEGIN and COMMIT round-trips on the ack path."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 10})
        event.listen(engine, "connect", _sqlite_pragmas)
        if single_statements:
            return engine
        # IMMEDIATE: a transaction that reads and then writes (book: budget check, then insert) would otherwise
        # fail at once with "database is locked" when another writer committed in between (busy_timeout does not
        # apply to a stale read snapshot); taking the write lock up front makes it wait its turn instead.
        # Sent on the driver's connection: through SQLAlchemy's execution path this one statement cost as much
        # as a whole short transaction (bench: 270 → 167 µs per session).
        event.listen(engine, "begin", lambda conn: conn.connection.driver_connection.execute("BEGIN IMMEDIATE"))
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def inbox_url(url: str) -> str | None:
    """The inbox's own SQLite file beside a ledger SQLite file (`x.db` → `x.inbox.db`); None for any other URL
    (PostgreSQL, in-memory, a URI with options): the inbox then lives in the ledger."""
    if not url.startswith("sqlite:///") or "?" in url or url.endswith(":memory:") or "file:" in url:
        return None
    path = Path(url.removeprefix("sqlite:///"))
    return f"sqlite:///{path.with_name(f'{path.stem}.inbox{path.suffix}')}"


def alembic_config(url: str) -> Config:
    """Alembic configuration pointing at our migrations and the given database."""
    from alembic.config import Config  # Alembic only where a migration runs (db.revisions reads the chain)

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str) -> None:
    """Bring the database at `url` to the newest schema."""
    from alembic import command

    command.upgrade(alembic_config(url), "head")


class Database:
    """The one handle on the ledger database."""

    def __init__(self, url: str, *, inbox_file: bool = False) -> None:
        self.url = url
        self.engine = make_engine(url, single_statements=inbox_file)
        # One transaction at a time from this process: a waiting thread wakes as soon as the lock is free, where
        # SQLite's busy handler would sleep 1, 2, 5 … 100 ms between tries. Only for the inbox's own file, whose
        # transactions are single statements.
        self._writer = threading.Lock() if inbox_file else None

    @property
    def is_postgres(self) -> bool:
        """True on PostgreSQL (several replicas may share it)."""
        return self.engine.dialect.name == "postgresql"

    def upgrade(self) -> None:
        """Migrate to head (and create the inbox's own file when it has one); Alembic runs only when the database
        is not at the newest migration already."""
        with self.engine.connect() as connection:
            at_head = revisions.current(connection) == revisions.head()
        if not at_head:
            upgrade(self.url)
            self.engine.dispose()  # a pooled SQLite connection that looked before Alembic's own engine migrated
            # keeps its old view of the schema
        if self.inbox is not self:
            InboxRow.__table__.create(self.inbox.engine, checkfirst=True)

    @cached_property
    def inbox(self) -> Database:
        """Where the inbox lives: a SQLite file of its own beside a SQLite ledger, else this database."""
        url = inbox_url(self.url)
        return Database(url, inbox_file=True) if url else self

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on error."""
        with self._writer or nullcontext(), Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A Core connection in a transaction that commits on success: no ORM session (the inbox's hot path)."""
        with self._writer or nullcontext(), self.engine.begin() as connection:
            yield connection

    def ping(self) -> bool:
        """True when the database answers."""
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return True
        except Exception:
            return False

    def dispose(self) -> None:
        """Close pooled connections (the inbox's too)."""
        self.engine.dispose()
        if "inbox" in self.__dict__ and self.inbox is not self:
            self.inbox.dispose()
