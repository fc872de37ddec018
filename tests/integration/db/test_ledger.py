"""The ledger on real SQLite and real PostgreSQL: migrations (and the offsets 0002 backfills), bookings, billed
stretches, once-only claims."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import gpubot.db.tables  # noqa: F401  (every table on SQLModel.metadata)
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from gpubot.db import bookings as repo
from gpubot.db import effects, ledger, pool_claims
from gpubot.db import held as held_repo
from gpubot.db.database import Database, alembic_config
from gpubot.domain.commitment import HELD_STATES
from gpubot.domain.model import BookingState
from gpubot.domain.pricing import use_offset
from sqlalchemy import Boolean, DateTime, Integer, Numeric, String, column, event, insert, inspect, select, table, text
from sqlalchemy.exc import OperationalError
from sqlmodel import SQLModel

from tests.databases import postgres_url
from tests.engine_kit import T0, a_booking, migrated


def test_migration_creates_every_table_and_is_repeatable(empty_database_url):
    db = migrated(empty_database_url)
    db.upgrade()
    tables = set(inspect(db.engine).get_table_names())
    assert {"bookings", "usage_intervals", "acquisition_attempts", "alerts", "budget_notifications",
            "telemetry_samples", "launch_intents", "effects", "alembic_version"} <= tables


def test_the_migrated_schema_is_the_models_schema(database_url):
    db = migrated(database_url)
    with db.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), SQLModel.metadata) == []


def test_every_migration_downgrades_and_upgrades_again(empty_database_url):
    db = migrated(empty_database_url)
    command.downgrade(alembic_config(empty_database_url), "0001")
    assert "ix_bookings_owner" in {i["name"] for i in inspect(db.engine).get_indexes("bookings")}
    db.upgrade()
    indexes = {i["name"]: i["column_names"] for i in inspect(db.engine).get_indexes("bookings")}
    assert indexes["ix_bookings_owner_state"] == ["owner", "state"] and "ix_bookings_owner" not in indexes


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path):
    db = migrated(f"sqlite:///{tmp_path / 'x.db'}")
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_bookings_get_short_ids_and_round_trip(database_url):
    db = migrated(database_url)
    with db.session() as session:
        first = repo.add_booking(a_booking(project="llm", max_price=Decimal("2.5")), session=session)
        second = repo.add_booking(a_booking(owner="UBOB"), session=session)
    assert (first.id, second.id) == (1, 2)
    with db.session() as session:
        loaded = repo.get_booking(1, session=session)
    assert loaded.project == "llm" and loaded.max_price == Decimal("2.5") and loaded.requested_at == T0
    assert loaded.label == "#1"


def test_a_booking_read_back_equals_the_one_added(database_url):
    db = migrated(database_url)
    wanted = a_booking(state=BookingState.ACTIVE, project="llm", provider="a", region="a-1", instance_id="i-1",
                      instance_name="gpubot-1-ab", price_per_gpu_hour=Decimal("1.25"), currency="EUR",
                      started_at=T0, ends_at=T0 + timedelta(hours=6), spot=True, note="x")
    with db.session() as session:
        added = repo.add_booking(wanted, session=session)
    with db.session() as session:
        assert repo.get_booking(added.id, session=session) == added == wanted.with_(id=added.id)
        assert repo.get_booking(99, session=session) is None


def test_a_second_insert_with_the_same_request_key_is_a_duplicate(database_url):
    db = migrated(database_url)
    with db.session() as session:
        repo.add_booking(a_booking(), session=session, request_key="cmd:1")
    with db.session() as session:
        with pytest.raises(repo.DuplicateRequest):
            repo.add_booking(a_booking(owner="UBOB"), session=session, request_key="cmd:1")
        assert repo.find_by_request_key("cmd:1", session=session).owner == "UALICE"


def test_held_bookings_and_what_holds_a_pool_read_only_the_running_bookings(database_url):
    db = migrated(database_url)
    running = dict(state=BookingState.ACTIVE, provider="pool", instance_id="host-1/gpubot-1",
                   price_per_gpu_hour=Decimal("2"), currency="USD", started_at=T0, ends_at=T0 + timedelta(hours=2))
    with db.session() as session:
        repo.add_booking(a_booking(**running, instance_name="gpubot-1"), session=session)
        repo.add_booking(a_booking(**{**running, "provider": "sim"}, instance_name="gpubot-2"), session=session)
        repo.add_booking(a_booking(**running, instance_name="gpubot-3").with_(state=BookingState.RELEASED),
                         session=session)
    with db.session() as session:
        commitments = held_repo.held_bookings([BookingState.ACTIVE], session=session)
        claimed, on_pool = pool_claims.held_on("pool", [BookingState.ACTIVE], session=session)
    assert sorted(c.id for c in commitments) == [1, 2]
    assert commitments[0].price_per_gpu_hour == Decimal("2") and commitments[0].ends_at == T0 + timedelta(hours=2)
    assert on_pool == [("host-1/gpubot-1", "gpubot-1", 4)] and claimed == []


@pytest.mark.postgres
def test_a_launch_committed_while_budgets_are_read_still_counts():
    """PostgreSQL reads committed data per statement: the held bookings are read in one statement, so a booking
    placed by another replica mid-read counts once (read as placed, then as waiting, it counted nowhere and a
    third booking slipped past the budget)."""
    url = next(schema := postgres_url())
    db = migrated(url)
    with db.session() as session:
        waiting = repo.add_booking(a_booking(state=BookingState.ACQUIRING, estimate=Decimal(16)), session=session)
    launched = False

    def launch_elsewhere(conn, cursor, statement, *args) -> None:
        nonlocal launched
        if launched or "FROM bookings" not in statement:
            return
        launched = True
        with db.engine.begin() as other:
            repo.transition(waiting.id, [BookingState.ACQUIRING], BookingState.ACTIVE, session=other,
                            provider="sim", price_per_gpu_hour=Decimal(2), currency="USD", started_at=T0,
                            ends_at=T0 + timedelta(hours=2))

    event.listen(db.engine, "after_cursor_execute", launch_elsewhere)
    try:
        with db.session() as session:
            held = held_repo.held_bookings(HELD_STATES, session=session)
    finally:
        event.remove(db.engine, "after_cursor_execute", launch_elsewhere)
        db.dispose()
        schema.close()
    assert launched and len(held) == 1 and held[0].estimate == Decimal(16)


def test_transition_moves_only_from_allowed_states(database_url):
    db = migrated(database_url)
    with db.session() as session:
        booking = repo.add_booking(a_booking(), session=session)
    with db.session() as session:
        assert repo.transition(booking.id, [BookingState.REQUESTED], BookingState.ACQUIRING, session=session)
        assert not repo.transition(booking.id, [BookingState.REQUESTED], BookingState.ACQUIRING, session=session)


def test_a_stretch_is_billed_once(database_url):
    db = migrated(database_url)
    with db.session() as session:
        booking = repo.add_booking(a_booking(), session=session)
    running = booking.with_(provider="sim", instance_name="gpubot-1-abc", price_per_gpu_hour=Decimal("2.42"),
                            currency="USD", started_at=T0)
    with db.session() as session:
        assert ledger.append_interval(running, T0, T0 + timedelta(minutes=5), session=session)
        assert not ledger.append_interval(running, T0, T0 + timedelta(minutes=7), session=session)
        assert ledger.append_interval(running, T0 + timedelta(minutes=5), T0 + timedelta(minutes=9),
                                      session=session)
    with db.session() as session:
        assert ledger.billed_until(booking.id, session=session) == T0 + timedelta(minutes=9)
        marks = ledger.billing_marks([booking.id, 999], session=session)
        assert list(marks) == [booking.id] and marks[booking.id].billed_until == T0 + timedelta(minutes=9)
        stretches = ledger.list_intervals(booking.id, session=session)
    assert [(s.start, s.end) for s in stretches] == [(T0, T0 + timedelta(minutes=5)),
                                                     (T0 + timedelta(minutes=5), T0 + timedelta(minutes=9))]
    assert stretches[0].price_per_gpu_hour == Decimal("2.42")


def test_billing_marks_hold_the_bookings_rows_until_the_transaction_ends():
    """PostgreSQL: a billing pass's marks lock the booking's row, so a release of the same booking waits for the
    pass to commit and then sees its stretch (SQLite's BEGIN IMMEDIATE already lets one writer in at a time)."""
    url = next(schema := postgres_url())
    db = migrated(url)
    with db.session() as session:
        booking = repo.add_booking(a_booking(state=BookingState.ACTIVE), session=session)
    try:
        with db.session() as holder:
            assert ledger.billing_marks([booking.id], session=holder)[booking.id].state == BookingState.ACTIVE
            with db.session() as other, pytest.raises(OperationalError, match="lock"):
                other.execute(text("SET lock_timeout = '200ms'"))
                ledger.billing_marks([booking.id], session=other)
    finally:
        db.dispose()
        schema.close()


def test_an_effect_is_claimed_once(database_url):
    db = migrated(database_url)
    with db.session() as session:
        assert effects.claim_effect("dm:ready:1", T0, session=session)
        assert not effects.claim_effect("dm:ready:1", T0, session=session)
        assert effects.claim_effect("dm:ready:2", T0, session=session)
    with db.session() as session:
        assert not effects.claim_effect("dm:ready:2", T0, session=session)


def test_a_stretch_records_its_offset_into_continuous_use(database_url):
    db = migrated(database_url)
    started = T0 + timedelta(microseconds=700_000)
    with db.session() as session:
        booking = repo.add_booking(a_booking(), session=session)
    running = booking.with_(provider="sim", instance_name="gpubot-1-abc", price_per_gpu_hour=Decimal("2.42"),
                            currency="USD", started_at=started)
    with db.session() as session:
        ledger.append_interval(running, started, T0 + timedelta(hours=2), session=session)
        ledger.append_interval(running, T0 + timedelta(hours=2), T0 + timedelta(hours=5), session=session)
        ledger.append_interval(running.with_(started_at=None), T0 + timedelta(hours=5), T0 + timedelta(hours=6),
                               session=session)
    with db.engine.connect() as conn:
        offsets = conn.execute(select(_USAGE.c.offset_s).order_by(_USAGE.c.start)).scalars().all()
    assert offsets == [0, 2 * 3600 - 1, 0]  # whole seconds, truncated; unknown start: 0


_BOOKINGS = table("bookings", column("id", Integer()), column("owner", String()), column("gpu", String()),
                  column("count", Integer()), column("duration_s", Integer()), column("state", String()),
                  column("spot", Boolean()), column("requested_at", DateTime(timezone=True)),
                  column("started_at", DateTime(timezone=True)), column("attempt_rounds", Integer()))
_USAGE = table("usage_intervals", column("id", Integer()), column("booking_id", Integer()),
               column("instance_name", String()), column("owner", String()), column("provider", String()),
               column("gpu", String()), column("count", Integer()), column("start", DateTime(timezone=True)),
               column("end", DateTime(timezone=True)), column("seconds", Integer()),
               column("price_per_gpu_hour", Numeric(18, 6)), column("currency", String()), column("spot", Boolean()),
               column("offset_s", Integer()))


def test_migration_0002_backfills_each_stretch_offset_from_its_booking_start(empty_database_url):
    command.upgrade(alembic_config(empty_database_url), "0001")
    db = Database(empty_database_url)
    starts = {1: T0 + timedelta(microseconds=600_000), 2: None, 3: T0 + timedelta(hours=1)}
    stretches = [(1, T0 + timedelta(microseconds=600_000)), (1, T0 + timedelta(hours=3)),  # 3 h less 0.6 s
                 (1, T0 + timedelta(hours=3, seconds=1, microseconds=100_000)), (2, T0 + timedelta(hours=9)),
                 (3, T0)]  # an orphan billed from before the booking started: 0
    with db.engine.begin() as conn:
        conn.execute(insert(_BOOKINGS), [dict(id=i, owner="UALICE", gpu="a100", count=1, duration_s=3600,
                                              state="released", spot=False, requested_at=T0, started_at=s,
                                              attempt_rounds=0) for i, s in starts.items()])
        conn.execute(insert(_USAGE), [dict(booking_id=b, instance_name=f"n{n}", owner="UALICE", provider="sim",
                                           gpu="a100", count=1, start=s, end=s + timedelta(minutes=10), seconds=600,
                                           price_per_gpu_hour=Decimal("1.5"), currency="USD", spot=False)
                                      for n, (b, s) in enumerate(stretches)])
    db.upgrade()
    with db.engine.connect() as conn:
        offsets = conn.execute(select(_USAGE.c.offset_s).order_by(_USAGE.c.id)).scalars().all()
    assert offsets == [use_offset(starts[b], s) for b, s in stretches] == [0, 3 * 3600 - 1, 3 * 3600, 0, 0]
    db.dispose()


def test_a_reading_without_utilisation_is_stored_as_unknown(database_url):
    """A MIG-enabled GPU reports temperature and memory but no utilisation: it is kept, with util unknown."""
    from gpubot.db import telemetry as telemetry_repo
    from gpubot.domain.ports import GpuReading

    db = migrated(database_url)
    with db.session() as session:
        booking = repo.add_booking(a_booking(), session=session)
        telemetry_repo.add_samples(booking.id, [GpuReading(0, None, 91.0, 11125.0, 81559.0),
                                                GpuReading(1, 40.0, None)], T0, session=session)
    with db.session() as session:
        found = telemetry_repo.samples_of([booking.id], T0 - timedelta(seconds=1), session=session)[booking.id]
    assert sorted((s.gpu_index, s.util, s.temp_c) for s in found) == [(0, None, 91.0), (1, 40.0, None)]
