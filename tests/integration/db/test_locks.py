"""The budget locks on real SQLite and real PostgreSQL: taken with the first read of a budget decision (the budgets
admins set), in one statement on PostgreSQL, and still serialising decisions across connections (replicas)."""

from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest
from gpubot.db import bookings as repo
from gpubot.db import effects
from gpubot.db import held as held_repo
from gpubot.db.locks import lock_budgets
from gpubot.domain.commitment import HELD_STATES
from gpubot.domain.model import BookingState
from sqlalchemy import event, text

from tests.databases import postgres_url
from tests.engine_kit import T0, a_booking, migrated

SCOPES = ["user:UALICE", "team", "project:(none)"]


def _statements(db) -> list[str]:
    sent: list[str] = []
    event.listen(db.engine, "before_cursor_execute", lambda _c, _cur, sql, *_a: sent.append(sql))
    return sent


def test_the_locks_come_with_the_budgets_admins_set_in_one_statement(database_url):
    db = migrated(database_url)
    with db.session() as session:
        effects.set_budget_override("team", Decimal(70), "UADMIN", T0, session=session)
        effects.set_budget_override("user:UBOB", Decimal(5), "UADMIN", T0, session=session)
    sent = _statements(db)
    with db.session() as session:
        overrides = lock_budgets(SCOPES, session=session)
        if db.is_postgres:
            held = session.connection().execute(text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted"
            )).scalar_one()
            assert held == len(SCOPES)
    assert overrides == {"team": Decimal(70), "user:UBOB": Decimal(5)}
    assert len(sent) == 1 + db.is_postgres  # (the second on PostgreSQL: the pg_locks query above)


@pytest.mark.postgres
def test_a_second_decision_waits_for_the_first_and_then_reads_its_hold():
    # SQLite's lock is the write lock of BEGIN IMMEDIATE (db.database), taken before any statement: nothing changed.
    url = next(schema := postgres_url())
    db = migrated(url)
    seen: list[list[tuple[str, Decimal]]] = []

    def second() -> None:
        with db.session() as session:
            lock_budgets(["team", "user:UBOB"], session=session)
            seen.append([(h.owner, h.estimate) for h in held_repo.held_bookings(HELD_STATES, session=session)])

    try:
        with db.session() as session:
            lock_budgets(SCOPES, session=session)
            repo.add_booking(a_booking(state=BookingState.SCHEDULED, estimate=Decimal(16)), session=session)
            waiter = threading.Thread(target=second)
            waiter.start()
            _wait_until_blocked_by(db, session.connection().execute(text("SELECT pg_backend_pid()")).scalar_one())
            assert not seen, "the second decision read the commitments while the first held its lock"
        waiter.join(timeout=30)
    finally:
        db.dispose()
        schema.close()
    assert seen == [[("UALICE", Decimal(16))]]


def _wait_until_blocked_by(db, pid: int) -> None:
    """Until another connection waits for a lock that the backend `pid` holds."""
    deadline = time.monotonic() + 10
    with db.engine.connect() as conn:
        while time.monotonic() < deadline:
            if conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid))"),
                            {"pid": pid}).scalar_one():
                return
            conn.rollback()
            time.sleep(0.01)
    raise AssertionError("the second decision never waited for the budget lock")
