"""Shared fixtures: databases (SQLite and PostgreSQL, the same tests on both), clocks, policies."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, text

os.environ.setdefault("SKIP_SLACK_SDK_WARNING", "1")
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
# google.auth looks for the GCE metadata server (a link-local address) when it finds no credentials: never here.
os.environ.setdefault("NO_GCE_CHECK", "true")

PG_ADMIN_URL = os.environ.get("GPUBOT_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def _postgres_reachable() -> str | None:
    try:
        engine = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:
        return f"PostgreSQL at {PG_ADMIN_URL.split('@')[-1]} is unreachable ({type(exc).__name__}); skipped"


_PG_PROBLEM = _postgres_reachable()


def postgres_schema_url() -> Iterator[str]:
    """A fresh schema on the test PostgreSQL server, dropped afterwards."""
    if _PG_PROBLEM:
        pytest.skip(_PG_PROBLEM)
    schema = f"t_{secrets.token_hex(5)}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{PG_ADMIN_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request, tmp_path) -> Iterator[str]:
    """The same test on SQLite (a file) and on PostgreSQL (a fresh schema)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ledger.db'}"
    else:
        yield from postgres_schema_url()


class Clock:
    """A controllable clock: `now()` and `advance()`."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 11, 2, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> datetime:
        self.current += timedelta(**delta)
        return self.current


@pytest.fixture
def clock() -> Clock:
    """A controllable clock starting 2026-11-02 10:00 UTC."""
    return Clock()
