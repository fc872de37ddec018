"""Read the team's ledger for `gpubot replay --from-ledger`: its bookings and telemetry over a period, read-only.

It never creates, migrates or writes a database: a SQLite file that does not exist is refused, SQLite is opened
read-only (`mode=ro`), and PostgreSQL sessions are read-only transactions.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from gpubot.db import bookings as booking_repo
from gpubot.db import reports as reports_db
from gpubot.domain.replay_ledger import ledger_trace
from gpubot.domain.replay_trace import TraceError
from gpubot.scheduling.replay.runner import ReplayInput
from sqlalchemy import Engine, create_engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

__all__ = ["read_ledger", "read_only_engine", "read_only_url"]


def read_only_url(url: str) -> tuple[str, dict]:
    """The URL and connect arguments that open `url` for reading only; a SQLite file must already exist."""
    if url.startswith("sqlite:///") and "?" not in url and not url.endswith(":memory:"):
        path = Path(url.removeprefix("sqlite:///"))
        if not path.is_file():
            raise TraceError(f"--from-ledger: no database at {path} (the replay reads a ledger, it never creates "
                             f"one: pass --database or set DATABASE_URL)")
        return f"sqlite:///file:{path.resolve()}?mode=ro&uri=true", {}
    if url.startswith("postgresql"):
        return url, {"connect_timeout": 5}
    return url, {}


def read_only_engine(url: str) -> Engine:
    """An engine on `url` that can only read (see read_only_url)."""
    target, connect = read_only_url(url)
    engine = create_engine(target, connect_args=connect)
    if engine.dialect.name == "postgresql":
        engine = engine.execution_options(postgresql_readonly=True)  # every transaction READ ONLY
    return engine


def read_ledger(url: str, since: datetime, until: datetime, busy_from: float) -> ReplayInput:
    """The bookings asked for in [since, until) that ran, as a trace, with their telemetry as utilisation."""
    engine = read_only_engine(url)
    try:
        with Session(engine) as session:
            bookings = [b for b in booking_repo.list_bookings(session=session)
                        if b.started_at is not None and since <= b.requested_at < until]
            # telemetry runs past the period for bookings still held at its end; a week covers max_duration
            samples = reports_db.samples_for([b.id for b in bookings], since, until + timedelta(days=8),
                                             session=session)
    except SQLAlchemyError as exc:
        first = str(exc.orig if getattr(exc, "orig", None) else exc).splitlines()[0]
        raise TraceError(f"--from-ledger: cannot read the ledger at {engine.url.render_as_string(hide_password=True)}"
                         f" ({first})") from None
    finally:
        engine.dispose()
    jobs, util = ledger_trace(bookings, samples, since, until, busy_from)
    if not jobs:
        raise TraceError(f"--from-ledger: no booking asked for between {since:%Y-%m-%d %H:%M} and "
                         f"{until:%Y-%m-%d %H:%M} UTC ran, so there is nothing to replay")
    return ReplayInput(jobs, util)
