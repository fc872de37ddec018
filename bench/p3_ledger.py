"""P3: ledger queries on a generated year of usage: the monthly cost report by user, the daily digest data and
`/gpu budget`, each computed cold (no priced period cached). The floor of each is one hand-written GROUP BY over
the same rows with the bare driver (sqlite3, psycopg). On SQLite and, when reachable, on PostgreSQL."""

from __future__ import annotations

import os
import secrets
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path

from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.digest import build_digest
from gpubot.scheduling.money.reports import budget_lines_for, cost_report
from sqlalchemy import create_engine, text

from bench.engines import bench_engine, bench_policy
from bench.figures import Figure
from bench.ledger_data import PROVIDERS, generate, now

__all__ = ["run"]

SIZES = {"full": (20_000, 200, 20, 3), "tiny": (40, 20, 4, 1)}  # (bookings, users, projects, repeats)
TARGET = 2.0
PG_URL = os.environ.get("GPUBOT_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MONTH = (datetime(2026, 11, 1), datetime(2026, 12, 1))
TO_DATE = (datetime(2026, 12, 1), datetime(2026, 12, 14))  # the digest of Dec 13 charts Dec 1 to 13

# The floors: one GROUP BY over the rows of the window, clipped to it, priced without tiers.
SQLITE_FLOOR = {
    "owner": """SELECT owner, SUM(count * price_per_gpu_hour * 24 * (julianday(min("end", :u)) -
                julianday(max(start, :s)))) FROM usage_intervals WHERE "end" > :s AND start < :u GROUP BY owner""",
    "day": """SELECT date(start), SUM(count * price_per_gpu_hour * 24 * (julianday(min("end", :u)) -
              julianday(max(start, :s)))) FROM usage_intervals WHERE "end" > :s AND start < :u GROUP BY 1""",
}
PG_FLOOR = {
    "owner": """SELECT owner, SUM(count * price_per_gpu_hour * EXTRACT(EPOCH FROM LEAST("end", %(u)s) -
                GREATEST(start, %(s)s)) / 3600) FROM usage_intervals WHERE "end" > %(s)s AND start < %(u)s
                GROUP BY owner""",
    "day": """SELECT start::date, SUM(count * price_per_gpu_hour * EXTRACT(EPOCH FROM LEAST("end", %(u)s) -
              GREATEST(start, %(s)s)) / 3600) FROM usage_intervals WHERE "end" > %(s)s AND start < %(u)s
              GROUP BY 1""",
}


def _policy():
    providers = {name: {"kind": "simulated", "stock": [{"gpu": "a100", "region": f"{name}-1", "count": 8,
                                                         "price": price}]} for name, price in PROVIDERS.items()}
    providers["b"]["discounts"] = [{"after": "4h", "percent": 10}]
    return bench_policy(providers, budget={"monthly": 10**9, "users": {"U007": 50000}, "projects": {"p03": 90000}})


def _cold(engine: Engine, call: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        engine.forget()
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _ours(engine: Engine, repeats: int) -> dict[str, float]:
    return {"report": _cold(engine, lambda: cost_report(engine, *_utc(MONTH), "user"), repeats),
            "digest": _cold(engine, lambda: build_digest(engine, date(2026, 12, 13)), repeats),
            "budget": _cold(engine, lambda: budget_lines_for(engine, "U007", "p03"), repeats)}


def _utc(window: tuple[datetime, datetime]) -> tuple[datetime, datetime]:
    return tuple(t.replace(tzinfo=now().tzinfo) for t in window)  # type: ignore[return-value]


def _floors(execute: Callable[[str, dict], object], floor: dict[str, str], repeats: int,
            fmt: Callable[[datetime], object]) -> dict[str, float]:
    def timed(query: str, window: tuple[datetime, datetime]) -> float:
        params = {"s": fmt(window[0]), "u": fmt(window[1])}
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            execute(query, params)
            times.append(time.perf_counter() - started)
        return statistics.median(times)
    month_now = (TO_DATE[0], now().replace(tzinfo=None))
    return {"report": timed(floor["owner"], MONTH), "digest": timed(floor["day"], TO_DATE),
            "budget": timed(floor["owner"], month_now)}


def _figures(db: str, ours: dict[str, float], floors: dict[str, float], note: str) -> list[Figure]:
    names = {"report": "monthly cost report by user", "digest": "daily digest data", "budget": "/gpu budget"}
    return [Figure(f"P3 {names[k]} ({db})", ours[k] * 1000, floors[k] * 1000, "ms", TARGET, note) for k in names]


def _sqlite(size: str) -> list[Figure]:
    bookings, users, projects, repeats = SIZES[size]
    with tempfile.TemporaryDirectory(prefix="bench-p3-") as tmp:
        path = Path(tmp) / "ledger.db"
        engine = bench_engine(f"sqlite:///{path}", _policy(), clock=now)
        try:
            rows = generate(engine.db.engine, bookings, users, projects)
            ours = _ours(engine, repeats)
        finally:
            engine.db.dispose()
        conn = sqlite3.connect(path)
        try:
            floors = _floors(lambda q, p: conn.execute(q, p).fetchall(), SQLITE_FLOOR, repeats,
                             lambda t: t.isoformat(sep=" ", timespec="microseconds"))
        finally:
            conn.close()
    return _figures("SQLite", ours, floors, f"{rows:,} usage intervals, {users} users, {projects} projects")


def _postgres(size: str) -> list[Figure]:
    bookings, users, projects, repeats = SIZES[size]
    schema = f"bench_{secrets.token_hex(4)}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        engine = bench_engine(f"{PG_URL}?options=-csearch_path%3D{schema}", _policy(), clock=now)
        try:
            rows = generate(engine.db.engine, bookings, users, projects)
            _analyze(engine.db.engine, schema)
            ours = _ours(engine, repeats)
            raw = engine.db.engine.raw_connection()
            try:
                cursor = raw.cursor()
                floors = _floors(lambda q, p: cursor.execute(q, p).fetchall(), PG_FLOOR, repeats, lambda t: t)
            finally:
                raw.close()
        finally:
            engine.db.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
    return _figures("PostgreSQL", ours, floors, f"{rows:,} usage intervals, {users} users, {projects} projects")


def _analyze(engine, schema: str) -> None:
    """Statistics for this schema's tables only. Committed: statistics analysed in a rolled-back transaction are
    discarded, and the planner then guesses every range. A bare ANALYZE would also take the system catalogs and
    every other schema of the database, and deadlocked there with a test worker creating its tables."""
    with engine.begin() as conn:
        tables = conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = :schema ORDER BY tablename"),
                              {"schema": schema}).scalars().all()
        conn.exec_driver_sql("ANALYZE " + ", ".join(f'"{schema}"."{table}"' for table in tables))


def postgres_reachable() -> bool:
    """True when the PostgreSQL server of the tests answers."""
    try:
        probe = create_engine(PG_URL, connect_args={"connect_timeout": 3})
        with probe.connect() as conn:
            conn.execute(text("SELECT 1"))
        probe.dispose()
        return True
    except Exception:
        return False


def run(size: str = "full") -> list[Figure]:
    """The three ledger figures on SQLite, and on PostgreSQL when it is reachable."""
    return _sqlite(size) + (_postgres(size) if postgres_reachable() else [])
