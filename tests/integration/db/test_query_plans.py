"""The statements run for every booking find their rows through an index on SQLite: none scans a table whose size
grows with history (attempts, stretches, bookings). Each is captured as the repository really sends it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.db import held as held_repo
from gpubot.db import ledger, ledger_window, pool_claims, telemetry, waits
from gpubot.domain.commitment import HELD_STATES
from gpubot.domain.model import ACTIVE_STATES, BookingState
from sqlalchemy import event

from tests.engine_kit import T0, migrated

HOT: dict[str, Callable] = {
    "acquisition waits": lambda s: waits.acquisition_waits("a100", T0 - timedelta(days=14), session=s),
    "bookings released lately (their median held share)":
        lambda s: waits.median_held_share(T0 - timedelta(days=14), session=s),
    "the holders of a GPU type": lambda s: waits.holders_of({"a100", "v100"}, session=s),
    "stretches added since": lambda s: ledger_window.ledger_rows(session=s, since=T0, until=T0 + timedelta(days=30),
                                                                 after_id=10),
    "billed until": lambda s: ledger.billed_until(1, session=s),
    "held bookings": lambda s: held_repo.held_bookings(HELD_STATES, session=s),
    "held bookings, summed for a budget check": lambda s: held_repo.held_for_budget(HELD_STATES, ["tiered"], T0, T0,
                                                                               session=s),
    "GPUs held": lambda s: repo.count_gpus_held("UALICE", list(BookingState), session=s),
    "booking views (with their replacements)": lambda s: repo.booking_views([1, 2], session=s),
    "telemetry windows": lambda s: telemetry.samples_of([1, 2], T0, session=s),
    "what holds a pool's GPUs (claims and bookings placed on it)":
        lambda s: pool_claims.held_on("pool", ACTIVE_STATES, session=s),
}


@pytest.mark.parametrize("name", sorted(HOT))
def test_a_per_booking_statement_never_scans_a_table(tmp_path, name):
    db = migrated(f"sqlite:///{tmp_path / 'x.db'}")
    sent: list[tuple[str, tuple]] = []
    event.listen(db.engine, "before_cursor_execute",
                 lambda _conn, _cursor, sql, params, _context, _many: sent.append((sql, params)))
    with db.session() as session:
        HOT[name](session)
    statements = [(sql, params) for sql, params in sent if sql.lstrip().upper().startswith(("SELECT", "WITH"))]
    assert statements, "the call ran no query"
    with db.engine.connect() as conn:
        for sql, params in statements:
            plan = [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params)]
            # a CTE the statement materialised (from rows found by an index) is its own, not a table's history
            made = {step.split()[1] for step in plan if step.startswith("MATERIALIZE ")}
            assert not any(step.startswith("SCAN") and step.split()[1] not in made for step in plan), (sql, plan)


def test_the_bookings_released_lately_are_found_by_state_and_release_time_not_every_release_ever(tmp_path):
    """wait_for_cheaper's forecast reads the bookings released in its window: the released ones ever are many more."""
    db = migrated(f"sqlite:///{tmp_path / 'x.db'}")
    sent: list[tuple[str, tuple]] = []
    event.listen(db.engine, "before_cursor_execute",
                 lambda _conn, _cursor, sql, params, _context, _many: sent.append((sql, params)))
    with db.session() as session:
        waits.median_held_share(T0 - timedelta(days=14), session=session)
    with db.engine.connect() as conn:
        plan = [row[-1] for sql, params in sent if sql.lstrip().upper().startswith("SELECT")
                for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params)]
    assert any("ix_bookings_state_released (state=? AND released_at>?)" in step for step in plan), plan
