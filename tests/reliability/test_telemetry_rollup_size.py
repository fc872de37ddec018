"""Ledger growth from telemetry before and after the roll-up (issue #27), on SQLite and PostgreSQL: one day of one
8-GPU booking at the agent's interval (15 s under the default windows; the flood's rate limit and the one-sample-
per-interval key hold a flooded token to that too), then the housekeeping job rolling it up. Measured: the
telemetry tables' bytes for that day, raw and rolled up, and how long the roll-up took."""

from __future__ import annotations

import os
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from datetime import timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.db import telemetry as telemetry_repo
from gpubot.db.tables.telemetry import TelemetryRollupRow, TelemetrySampleRow
from gpubot.domain.model import BookingState
from gpubot.domain.ports import GpuReading
from gpubot.scheduling.agent import agent_interval
from gpubot.scheduling.lifecycle.housekeeping import housekeep
from sqlalchemy import create_engine, func, text
from sqlalchemy.engine import make_url
from sqlmodel import select

from tests.databases import PG_ADMIN_URL, postgres_problem, sqlite_url
from tests.engine_kit import a_booking, make_engine, simulated_policy
from tests.reliability.figures import record

DAY = timedelta(days=1)
GPUS = 8


def _bytes(engine) -> int:
    """The telemetry tables' bytes, indexes included, with the space of deleted rows given back."""
    db = engine.db
    if db.is_postgres:
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.execute(text("VACUUM FULL telemetry_samples, telemetry_rollups"))
            return int(connection.execute(text("SELECT pg_total_relation_size('telemetry_samples') + "
                                               "pg_total_relation_size('telemetry_rollups')")).scalar_one())
    path = db.url.removeprefix("sqlite:///")
    db.engine.dispose()  # no pooled connection holds a transaction open
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("VACUUM")
    return os.path.getsize(path)


def _count(engine, table) -> int:
    with engine.db.session() as session:
        return session.exec(select(func.count()).select_from(table)).one()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def ledger_url(request, tmp_path, sqlite_template_dir) -> Iterator[str]:
    """A migrated ledger on SQLite, and on PostgreSQL a database of its own: VACUUM FULL keeps the rows deleted
    while a transaction of the same database might still see them, and the other test workers' transactions run in
    the shared one (a fresh-clone run measured the rolled-up day at 1,056 KiB there, 480 KiB alone)."""
    if request.param == "sqlite":
        yield sqlite_url(tmp_path, sqlite_template_dir)
        return
    if problem := postgres_problem():
        pytest.skip(problem)
    name = f"gpubot_rollup_{secrets.token_hex(4)}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_one_day_of_an_eight_gpu_booking_before_and_after_the_rollup(ledger_url, clock) -> None:
    engine = make_engine(ledger_url, simulated_policy(retention={"telemetry": "30d"}), clock)
    step = timedelta(seconds=agent_interval(engine.policy))
    with engine.db.session() as session:
        booking = repo.add_booking(a_booking(state=BookingState.ACTIVE, count=GPUS,
                                             requested_at=engine.now() - DAY), session=session).id
    empty = _bytes(engine)
    start, steps = engine.now() - DAY, int(DAY / step)
    for first in range(0, steps, 1000):
        with engine.db.session() as session:
            telemetry_repo.add_readings([
                (booking, GpuReading(gpu, float((i * 7 + gpu) % 100), 55.0 + i % 20, mem_used_mib=20000.0 + i % 50,
                                     mem_total_mib=40960.0, processes=1, process_mem_mib=19000.0), start + i * step)
                for i in range(first, min(first + 1000, steps)) for gpu in range(GPUS)], session=session)
    raw_rows = _count(engine, TelemetrySampleRow)
    raw = _bytes(engine) - empty
    clock.advance(days=1)  # the whole day is now older than anything the idle and health checks read
    began, rolled = time.perf_counter(), 0
    while (ran := housekeep(engine)["telemetry_rolled_up"]):
        rolled += ran
    took = time.perf_counter() - began
    rolled_bytes = _bytes(engine) - empty
    rollups = _count(engine, TelemetryRollupRow)
    assert raw_rows == rolled == steps * GPUS and _count(engine, TelemetrySampleRow) == 0
    assert rollups == GPUS * int(DAY / timedelta(minutes=5))
    assert rolled_bytes * 10 < raw
    kind = "PostgreSQL" if engine.db.is_postgres else "SQLite"
    record("telemetry roll-up", f"{kind}: one 8-GPU booking at {step.total_seconds():g} s: {raw_rows} samples "
           f"= {raw / 1024:.0f} KiB/day raw, {rollups} roll-ups = {rolled_bytes / 1024:.0f} KiB/day rolled up "
           f"(×{raw / max(rolled_bytes, 1):.0f} smaller); rolling the day up took {took:.1f} s")
