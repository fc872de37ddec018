"""Housekeeping on real SQLite and PostgreSQL: finished rows past their retention go, in bounded batches; fresh,
unfinished and undelivered rows stay, as do a live booking's notices and the ledger."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.db import inbox, outbox
from gpubot.db import telemetry as telemetry_repo
from gpubot.db.tables.bookings import BookingRow
from gpubot.db.tables.delivery import InboxRow, OutboxRow
from gpubot.db.tables.telemetry import TelemetryRollupRow, TelemetrySampleRow
from gpubot.domain.model import BookingState
from gpubot.domain.notices import BudgetCrossed, ExpiryWarning
from gpubot.domain.ports import GpuReading
from gpubot.scheduling.jobs import job_table
from gpubot.scheduling.lifecycle.housekeeping import housekeep
from sqlmodel import select

from tests.engine_kit import a_booking, make_engine, simulated_policy

DAY = timedelta(days=1)


@pytest.fixture
def engine(database_url, clock):
    return make_engine(database_url, simulated_policy(retention={"notices": "7d", "telemetry": "3d"}), clock)


def _booking(engine, state: BookingState) -> int:
    with engine.db.session() as session:
        return repo.add_booking(a_booking(state=state, requested_at=engine.now() - 30 * DAY), session=session).id


def _all(engine, column) -> set:
    with (engine.db.inbox if column.class_ is InboxRow else engine.db).session() as session:
        return set(session.exec(select(column)).all())


def test_the_job_runs_with_the_others(engine):
    assert "housekeeping" in job_table(engine)


def test_commands_done_over_a_day_ago_go_and_unfinished_ones_stay(engine):
    now = engine.now()
    with engine.db.inbox.session() as session:  # on SQLite the inbox's own file
        for key, received, done in (("old", now - 3 * DAY, now - 2 * DAY), ("fresh", now - 3 * DAY, now - DAY / 2),
                                    ("crashed", now - 30 * DAY, None)):
            inbox.record(key, "command", None, received, session=session)
            if done is not None:
                inbox.finish(key, "finished", done, session=session)
    assert housekeep(engine)["inbox"] == 1
    assert _all(engine, InboxRow.key) == {"fresh", "crashed"}


def _notice(engine, booking_id: int, minutes: int, *, delivered=None, failed=None) -> int:
    notice = ExpiryWarning(to="UALICE", booking_id=booking_id, gpu="a100", count=4,
                           offset=timedelta(minutes=minutes))
    with engine.db.session() as session:
        outbox.owe(notice, engine.now() - 30 * DAY, session=session)
        row_id = session.exec(select(OutboxRow.id).where(OutboxRow.notice_key == notice.key)).one()
        if delivered is not None:
            outbox.mark_delivered(row_id, engine.now() - delivered, session=session)
        if failed is not None:
            outbox.mark_failed(row_id, engine.now() - failed, "refused", session=session)
    return row_id


def test_notices_delivered_or_failed_past_retention_go_unless_owed_or_of_a_live_booking(engine):
    released, active = _booking(engine, BookingState.RELEASED), _booking(engine, BookingState.ACTIVE)
    gone = {_notice(engine, released, 1, delivered=8 * DAY), _notice(engine, released, 2, failed=8 * DAY)}
    kept = {_notice(engine, released, 3, delivered=6 * DAY), _notice(engine, released, 4),
            _notice(engine, active, 1, delivered=8 * DAY)}
    assert housekeep(engine)["outbox"] == 2
    assert _all(engine, OutboxRow.id) == kept
    assert not gone & _all(engine, OutboxRow.id)
    assert _all(engine, BookingRow.id) == {released, active}, "the ledger is never deleted"


def test_notices_of_no_booking_stay_their_key_keeps_a_month_long_cause_from_being_told_again(engine):
    crossed = BudgetCrossed(to="UALICE", scope="team", percent=80, period="2026-11")
    with engine.db.session() as session:
        outbox.owe(crossed, engine.now() - 30 * DAY, session=session)
        row_id = session.exec(select(OutboxRow.id).where(OutboxRow.notice_key == crossed.key)).one()
        outbox.mark_delivered(row_id, engine.now() - 20 * DAY, session=session)
    assert housekeep(engine)["outbox"] == 0
    with engine.db.session() as session:
        assert not outbox.owe(crossed, engine.now(), session=session), "told again after housekeeping"


def _samples(engine, booking_id: int, ages: list[timedelta]) -> None:
    with engine.db.session() as session:
        # One GPU per sample: the ledger keeps one sample per booking, GPU and time.
        telemetry_repo.add_readings([(booking_id, GpuReading(gpu, 50.0, 60.0), engine.now() - age)
                                     for gpu, age in enumerate(ages)], session=session)


def test_samples_older_than_retention_go_in_bounded_batches(engine):
    booking = _booking(engine, BookingState.ACTIVE)
    _samples(engine, booking, [4 * DAY] * 25 + [2 * DAY, timedelta(0)])
    first = housekeep(engine, batch=10, max_batches=2)
    assert (first["telemetry_samples"], first["telemetry_rolled_up"]) == (20, 1), "past retention goes, unrolled"
    assert len(_all(engine, TelemetrySampleRow.id)) == 6, "one run stops at its batch bound"
    assert housekeep(engine, batch=10, max_batches=2)["telemetry_samples"] == 5
    with engine.db.session() as session:
        left = telemetry_repo.samples_since(booking, engine.now() - 10 * DAY, session=session)
    assert [engine.now() - s.at for s in left] == [timedelta(0)], "the 2-day-old sample is rolled up"
    assert len(_all(engine, TelemetryRollupRow.id)) == 1
    assert housekeep(engine) == {"inbox": 0, "outbox": 0, "telemetry_samples": 0, "telemetry_rollups": 0,
                                 "telemetry_rolled_up": 0}
