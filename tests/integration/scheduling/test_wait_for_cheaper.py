"""`[acquire] wait_for_cheaper`: a booking whose cheapest offer is taken, but held by a booking of the team that ends
within the wait, stays queued for it rather than take a dearer free offer, and takes the best free offer when the
wait ends; on a real ledger (SQLite and PostgreSQL) over the simulated clouds, on a test clock."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState
from gpubot.scheduling.acquisition.queue import drain, start_now
from gpubot.scheduling.booking.booking import BookingAsk, book, extend, release

from tests.engine_kit import deliver, make_engine, simulated_policy

# simulated_policy: a100s on a ($1.50, 8 of them), b ($1.80) and c ($2.10).


def _engine(database_url, clock, **acquire):
    return make_engine(database_url, simulated_policy(acquire=acquire), clock)


def _booked(engine, count: int, hours: float, owner: str = "UALICE"):
    booked = book(engine, BookingAsk(owner=owner, gpu="a100", count=count, duration=timedelta(hours=hours)))
    return start_now(engine, booked.booking)


def _load(engine, booking_id):
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session)


def _progress(engine) -> str:
    """The booking message's latest line, as the bot words it."""
    deliver(engine)
    return engine.notifier.updates[-1][2]


def _where(booking) -> tuple:
    return booking.state, booking.provider, booking.price_per_gpu_hour


def test_it_waits_for_the_cheaper_cloud_whose_gpus_free_within_the_wait_and_takes_them_when_they_do(
        database_url, clock):
    engine = _engine(database_url, clock, wait_for_cheaper="1h")
    holder = _booked(engine, 8, 0.5, owner="UBOB")  # all of a's GPUs, booked for 30 minutes
    assert holder.provider == "a"

    waiting = _booked(engine, 2, 4)
    assert waiting.state == BookingState.QUEUED and waiting.provider is None
    line = _progress(engine)
    assert "waiting for a a-1 at $1.50/GPU-h, expected free in 30m, rather than b at $1.80/GPU-h now" in line

    clock.advance(minutes=10)
    drain(engine)
    assert _load(engine, waiting.id).state == BookingState.QUEUED  # a is still taken

    release(engine, holder.id, "UBOB")
    clock.advance(minutes=1)
    drain(engine)
    assert _where(_load(engine, waiting.id)) == (BookingState.ACTIVE, "a", Decimal("1.50"))


def test_when_the_cheaper_gpus_are_not_free_by_the_end_of_the_wait_it_takes_the_best_free_offer(database_url, clock):
    engine = _engine(database_url, clock, wait_for_cheaper="1h")
    _booked(engine, 8, 0.75, owner="UBOB")  # ends in 45 minutes by its booking, but nobody expires it here
    waiting = _booked(engine, 2, 4)
    assert waiting.state == BookingState.QUEUED

    clock.advance(minutes=59)
    drain(engine)
    assert _load(engine, waiting.id).state == BookingState.QUEUED
    clock.advance(minutes=2)
    drain(engine)
    assert _where(_load(engine, waiting.id)) == (BookingState.ACTIVE, "b", Decimal("1.80"))


def test_it_does_not_wait_for_gpus_that_free_after_the_wait(database_url, clock):
    engine = _engine(database_url, clock, wait_for_cheaper="1h")
    _booked(engine, 8, 3, owner="UBOB")  # a's GPUs are held for 3 hours: longer than the wait
    assert _where(_booked(engine, 2, 4)) == (BookingState.ACTIVE, "b", Decimal("1.80"))


def test_with_the_setting_off_it_takes_the_best_free_offer_at_once(database_url, clock):
    engine = _engine(database_url, clock)
    _booked(engine, 8, 0.5, owner="UBOB")
    assert _where(_booked(engine, 2, 4)) == (BookingState.ACTIVE, "b", Decimal("1.80"))


def test_bookings_queued_ahead_take_what_frees_first(database_url, clock):
    engine = _engine(database_url, clock, wait_for_cheaper="1h")
    _booked(engine, 4, 0.25, owner="UBOB")
    _booked(engine, 4, 0.75, owner="UBOB")  # a is full: 4 GPUs free in 15 minutes, 4 more in 45
    first = _booked(engine, 4, 4)
    assert first.state == BookingState.QUEUED
    second = _booked(engine, 4, 4, owner="UCAROL")
    assert second.state == BookingState.QUEUED  # after the first takes the 4 freed first, 45 minutes: in time
    third = _booked(engine, 2, 4, owner="UDAVE")
    assert _where(third) == (BookingState.ACTIVE, "b", Decimal("1.80"))  # the 8 held go to the two ahead


def test_a_holder_reminded_of_idle_gpus_is_expected_to_free_them_when_its_grace_ends(database_url, clock):
    engine = _engine(database_url, clock, wait_for_cheaper="1h")
    holder = _booked(engine, 8, 3, owner="UBOB")  # booked for 3 hours: after the wait by its booked end
    with engine.db.session() as session:  # the no-process rule reminded its owner a minute ago (lifecycle.idle)
        repo.set_fields(holder.id, session=session, idle_since=clock() - timedelta(minutes=6),
                        idle_reminded_at=clock() - timedelta(minutes=1), idle_rule="no_process")
    waiting = _booked(engine, 2, 4)
    assert waiting.state == BookingState.QUEUED  # released 10 minutes after the reminder (idle.no_process_grace)
    assert "expected free in 9m" in _progress(engine)


def test_bookings_of_other_gpu_types_do_not_change_the_forecast(database_url, clock):
    # a also sells 16 h100s in a-1. Held until 10 minutes from now and one queued ahead for 8 more, they would move
    # the forecast whichever way they were counted: as holders (free in 10m), as ahead (10 wanted of the 8 a100s
    # held: no wait) or as both (free in 10m).
    a = {"kind": "simulated", "stock": [{"gpu": "a100", "region": "a-1", "count": 8, "price": 1.50},
                                        {"gpu": "h100", "region": "a-1", "count": 16, "price": 3.00}]}
    engine = make_engine(database_url, simulated_policy(acquire={"wait_for_cheaper": "1h"}, providers={"a": a}),
                         clock)
    _booked(engine, 8, 0.5, owner="UBOB")  # a's a100s, for 30 minutes
    for owner in ("UERIN", "UFRANK"):
        held = start_now(engine, book(engine, BookingAsk(owner=owner, gpu="h100", count=8,
                                                         duration=timedelta(minutes=10))).booking)
        assert _where(held) == (BookingState.ACTIVE, "a", Decimal("3.00"))
    ahead = start_now(engine, book(engine, BookingAsk(owner="UGINA", gpu="h100", count=8,
                                                      duration=timedelta(hours=1))).booking)
    assert ahead.state == BookingState.QUEUED
    waiting = _booked(engine, 2, 4)
    assert waiting.state == BookingState.QUEUED
    assert "waiting for a a-1 at $1.50/GPU-h, expected free in 30m, rather than b at $1.80/GPU-h now" in \
        _progress(engine)


def _held(engine, count: int, hours: float, provider: str | None = None, owner: str = "UBOB"):
    booked = book(engine, BookingAsk(owner=owner, gpu="a100", count=count, duration=timedelta(hours=hours),
                                     provider=provider))
    return start_now(engine, booked.booking)


def test_a_booking_queued_ahead_that_does_not_accept_the_cheaper_cloud_is_not_counted_as_taking_it(
        database_url, clock):
    engine = _engine(database_url, clock, wait_for_cheaper="1h")
    _held(engine, 8, 0.5)  # all of a's GPUs, for 30 minutes
    assert _held(engine, 8, 3, provider="c").provider == "c"  # c is full for 3 hours
    pinned = _held(engine, 4, 4, provider="c", owner="UCAROL")  # queued for c, and only c
    assert pinned.state == BookingState.QUEUED
    # a's 8 GPUs free in 30 minutes, and the booking queued ahead would not take them: all 8 are for this one
    waiting = _booked(engine, 8, 4)
    assert waiting.state == BookingState.QUEUED
    assert "expected free in 30m" in _progress(engine)


def test_a_booking_queued_ahead_whose_own_wait_ends_before_the_gpus_free_for_it_leaves_them_to_the_next(
        database_url, clock):
    engine = _engine(database_url, clock, wait_for_cheaper="1h")
    first = _held(engine, 4, 0.5)  # a: 4 GPUs free in 30 minutes
    second = _held(engine, 4, 70 / 60)  # and 4 more in 70
    ahead = _booked(engine, 4, 4, owner="UCAROL")
    assert ahead.state == BookingState.QUEUED  # it expects the 4 freed at 30 minutes, within its hour

    clock.advance(minutes=20)
    extend(engine, first.id, "UBOB", timedelta(hours=1))  # the first holder now ends at 90 minutes
    # The booking ahead would get a's GPUs at 70 minutes, after its wait ends at 60: it takes b then, so this one
    # (waiting until 80) expects the 4 freed at 70 for itself.
    waiting = _booked(engine, 4, 4)
    assert waiting.state == BookingState.QUEUED
    assert "expected free in 50m" in _progress(engine)

    clock.advance(minutes=41)  # the wait of the booking ahead is over: it takes the best free offer
    drain(engine)
    assert _where(_load(engine, ahead.id)) == (BookingState.ACTIVE, "b", Decimal("1.80"))
    assert _load(engine, waiting.id).state == BookingState.QUEUED
    clock.advance(minutes=10)
    release(engine, second.id, "UBOB")
    clock.advance(minutes=1)
    drain(engine)
    assert _where(_load(engine, waiting.id)) == (BookingState.ACTIVE, "a", Decimal("1.50"))


def _finished(engine, clock, held: timedelta, booked: timedelta, times: int) -> None:
    """`times` bookings of the team that were held for `held` of their booked `booked`, released by now."""
    for _ in range(times):
        done = _held(engine, 1, booked.total_seconds() / 3600, provider="c", owner="UERIN")
        release(engine, done.id, "UERIN")
        with engine.db.session() as session:
            repo.set_fields(done.id, session=session, started_at=clock() - held, released_at=clock())


def test_a_holder_is_expected_to_end_when_the_teams_bookings_usually_did_not_at_its_booked_end(database_url, clock):
    engine = _engine(database_url, clock, wait_for_cheaper="1h")
    _finished(engine, clock, timedelta(hours=1), timedelta(hours=4), times=20)  # held a quarter of their time
    _held(engine, 8, 3)  # all of a's GPUs, booked for 3 hours: likely free in 45 minutes
    waiting = _booked(engine, 2, 4)
    assert waiting.state == BookingState.QUEUED
    assert "expected free in 45m" in _progress(engine)


def test_with_too_little_history_the_booked_end_stands(database_url, clock):
    engine = _engine(database_url, clock, wait_for_cheaper="1h")
    _finished(engine, clock, timedelta(hours=1), timedelta(hours=4), times=19)
    _held(engine, 8, 3)
    assert _where(_booked(engine, 2, 4)) == (BookingState.ACTIVE, "b", Decimal("1.80"))
