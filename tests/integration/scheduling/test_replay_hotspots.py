"""The two engine changes the replay needed: idle checks of chosen bookings, and pricing a period's ledger
incrementally (it is append-only), which must give exactly what pricing it afresh gives."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal

import pytest
from gpubot.db import ledger
from gpubot.db import telemetry as telemetry_repo
from gpubot.db.tables.billing import UsageIntervalRow
from gpubot.domain.budget import month_bounds
from gpubot.domain.model import BookingState
from gpubot.domain.ports import GpuReading
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.lifecycle.idle import check_idle
from gpubot.scheduling.money.ledger_costs import cost_items

from tests.databases import postgres_url as postgres_database
from tests.engine_kit import deliver, make_engine, simulated_policy


def _running(engine, owner: str, gpus: int = 2):
    booked = book(engine, BookingAsk(owner=owner, gpu="a100", count=gpus, duration=timedelta(hours=6)))
    return acquire(engine, booked.booking.id)


def test_check_idle_of_chosen_bookings_leaves_the_others_alone(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    first, second = _running(engine, "UALICE"), _running(engine, "UBOB")
    for _minute in range(12):
        with engine.db.session() as session:
            for booking in (first, second):
                telemetry_repo.add_samples(booking.id, [GpuReading(0, 2.0, 40.0)], clock(), session=session)
        clock.advance(minutes=1)
    assert check_idle(engine, only=[first.id, 999]) == 1
    deliver(engine)
    reminded = [user for user, text in engine.notifier.dms if "has been idle" in text]
    assert reminded == ["UALICE"]
    assert check_idle(engine) == 2  # every running booking when no ids are given


def _fresh(engine, since, until):
    engine.memory.priced_periods.clear()
    with engine.db.session() as session:
        return cost_items(engine, since, until, session=session)


def _by_booking(items) -> dict[int, tuple[Decimal, int]]:
    """Amount and GPU-seconds per booking (a fresh pricing sums stretches in SQL, an incremental one adds
    them one by one: the figures must agree, not the number of items)."""
    totals: dict[int, tuple[Decimal, int]] = {}
    for item in items:
        amount, seconds = totals.get(item.booking_id, (Decimal(0), 0))
        totals[item.booking_id] = (amount + item.amount, seconds + item.gpu_seconds)
    return totals


def _priced(engine, since, until):
    with engine.db.session() as session:
        return cost_items(engine, since, until, session=session)


def test_pricing_a_period_again_adds_new_stretches_exactly(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    since, until, _ = month_bounds(clock(), engine.team_tz)
    bookings = [_running(engine, owner) for owner in ("UALICE", "UBOB", "UCAROL")]
    assert _priced(engine, since, until) == []
    clock.advance(hours=1)
    with engine.db.session() as session:
        ledger.append_interval(bookings[0], bookings[0].started_at, clock(), session=session)
    assert sum(i.amount for i in _priced(engine, since, until)) == Decimal("3.00")  # 2 GPUs × 1 h × $1.50
    clock.advance(hours=1)
    with engine.db.session() as session:
        for booking in bookings[1:]:
            ledger.append_interval(booking, booking.started_at, clock(), session=session)
    incremental = _priced(engine, since, until)
    assert _by_booking(incremental) == _by_booking(_fresh(engine, since, until))
    assert sum(i.amount for i in incremental) == Decimal("15.00")


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL schema (only PostgreSQL can commit a lower id after a higher one)."""
    yield from postgres_database()


def test_a_stretch_committed_late_with_a_lower_id_is_not_missed(postgres_url, clock):
    # SQLite has one writer at a time (BEGIN IMMEDIATE), so its ids become visible in order and the priced
    # period is extended without counting; PostgreSQL's sequences can commit out of order, as simulated here.
    engine = make_engine(postgres_url, simulated_policy(), clock)
    since, until, _ = month_bounds(clock(), engine.team_tz)
    booking = _running(engine, "UALICE")
    clock.advance(hours=2)
    with engine.db.session() as session:
        for row_id, start_h in ((100, 0), (300, 1)):
            session.add(UsageIntervalRow(id=row_id, booking_id=booking.id, instance_name=f"n{row_id}",
                                         owner="UALICE", provider=booking.provider, gpu="a100", count=2,
                                         start=booking.started_at + timedelta(hours=start_h),
                                         end=booking.started_at + timedelta(hours=start_h + 1), seconds=3600,
                                         price_per_gpu_hour=Decimal("1.50"), currency="USD"))
    assert sum(i.amount for i in _priced(engine, since, until)) == Decimal("6.00")
    with engine.db.session() as session:  # another replica's transaction, begun earlier, commits now
        session.add(UsageIntervalRow(id=200, booking_id=booking.id, instance_name="n200", owner="UALICE",
                                     provider=booking.provider, gpu="a100", count=2,
                                     start=booking.started_at + timedelta(minutes=30),
                                     end=booking.started_at + timedelta(minutes=90), seconds=3600,
                                     price_per_gpu_hour=Decimal("1.50"), currency="USD"))
    assert sum(i.amount for i in _priced(engine, since, until)) == Decimal("9.00")
    assert booking.state == BookingState.ACTIVE
