"""A spot booking that finds no spot capacity for `[spot] fallback_after` launches on demand: on a real ledger
(SQLite and PostgreSQL), a cloud selling spot with none left and clouds with on-demand GPUs free, on a test clock."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState
from gpubot.scheduling.acquisition.queue import drain, start_now
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.lifecycle.reconcile import reconcile
from gpubot.scheduling.metrics import SPOT_FALLBACKS
from gpubot.scheduling.money.billing import billed_total

from tests.engine_kit import deliver, make_engine, simulated_policy

# "s" sells spot A100s (none left once _engine took its stock); a, b and c (simulated_policy) sell them on demand
# from $1.50 per GPU-hour.
SPOT = {"kind": "simulated", "stock": [{"gpu": "a100", "region": "s-1", "count": 8, "price": 2.00,
                                        "spot_price": 0.80}]}


def _engine(database_url, clock, sold_out: bool = True, **spot):
    engine = make_engine(database_url, simulated_policy(providers={"s": SPOT}, spot=spot), clock)
    if sold_out:
        engine.providers["s"].set_stock("a100", "s-1", 0)
    return engine


def _spot_booking(engine, **ask):
    booked = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=2, duration=timedelta(hours=6), spot=True,
                                     **ask))
    return start_now(engine, booked.booking)


def _load(engine, booking_id):
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session)


def _fell_back_dms(engine) -> list[str]:
    deliver(engine)
    return [text for user, text in engine.notifier.dms if user == "UALICE" and "found no spot capacity" in text]


def test_a_spot_booking_launches_on_demand_once_fallback_after_has_passed_and_is_billed_at_that_price(
        database_url, clock):
    engine = _engine(database_url, clock, fallback_after="45m")
    booking = _spot_booking(engine)
    assert booking.state == BookingState.QUEUED and booking.spot

    clock.advance(minutes=44)
    drain(engine)
    assert _load(engine, booking.id).state == BookingState.QUEUED  # still waiting for spot
    assert _fell_back_dms(engine) == []

    before = SPOT_FALLBACKS.labels("a")._value.get()
    clock.advance(minutes=2)
    drain(engine)

    assert SPOT_FALLBACKS.labels("a")._value.get() == before + 1
    placed = _load(engine, booking.id)
    assert placed.state == BookingState.ACTIVE and not placed.spot
    assert (placed.provider, placed.region, placed.price_per_gpu_hour) == ("a", "a-1", Decimal("1.50"))
    told = _fell_back_dms(engine)
    assert told == [f"#{placed.id} found no spot capacity for 2× a100 in 46m (the limit is 45m), so it launched on "
                    "demand on a a-1 at $1.50 per GPU-hour ($3.00/h), billed at that price. On-demand machines are "
                    "not taken back."]
    ready = [text for user, text in engine.notifier.dms if user == "UALICE" and "is ready" in text]
    assert ready and "save checkpoints" not in ready[-1]  # an on-demand machine: no spot warning

    clock.advance(hours=2)
    reconcile(engine)
    assert billed_total(engine, placed) == Decimal("6.00")  # 2 GPUs × 2 h × $1.50, the on-demand price


def test_unset_it_waits_three_usual_waits_and_an_hour_when_nothing_says_how_long_a100s_take(database_url, clock):
    engine = _engine(database_url, clock)
    booking = _spot_booking(engine)

    clock.advance(minutes=59)
    drain(engine)
    assert _load(engine, booking.id).state == BookingState.QUEUED

    clock.advance(minutes=2)
    drain(engine)
    assert _load(engine, booking.id).state == BookingState.ACTIVE
    assert len(_fell_back_dms(engine)) == 1


def test_the_owners_price_cap_still_holds_after_the_fallback(database_url, clock):
    engine = _engine(database_url, clock, fallback_after="30m")
    booking = _spot_booking(engine, max_price=Decimal("1.00"))  # spot at $0.80 fits; on demand ($1.50+) does not

    clock.advance(minutes=31)
    drain(engine)

    waiting = _load(engine, booking.id)
    assert waiting.state == BookingState.QUEUED and waiting.spot and waiting.provider is None
    assert _fell_back_dms(engine) == []


def test_a_spot_booking_with_spot_capacity_never_falls_back(database_url, clock):
    engine = _engine(database_url, clock, sold_out=False, fallback_after="0s")
    booking = _spot_booking(engine)

    assert booking.state == BookingState.ACTIVE and booking.spot and booking.price_per_gpu_hour == Decimal("0.80")
    assert _fell_back_dms(engine) == []


@pytest.mark.parametrize(("mode", "state"), [("approve", BookingState.AWAITING_APPROVAL),
                                             ("block", BookingState.FAILED)])
def test_budgets_are_checked_again_at_the_on_demand_price(database_url, clock, mode, state):
    # 2× a100 for 6 h: $9.60 at the spot price fits $15 a month; $18.00 on demand does not.
    policy = simulated_policy(providers={"s": SPOT}, spot={"fallback_after": "30m"},
                              budget={"monthly": 15, "over_budget": mode})
    engine = make_engine(database_url, policy, clock)
    engine.providers["s"].set_stock("a100", "s-1", 0)
    booking = _spot_booking(engine)
    assert booking.state == BookingState.QUEUED

    clock.advance(minutes=31)
    drain(engine)

    stopped = _load(engine, booking.id)
    assert stopped.state == state and stopped.provider is None  # nothing launched over the budget
    assert _fell_back_dms(engine) == []
