"""Watches on a real ledger over simulated clouds: fire once, share the probing, expire, book the offer found."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gpubot.domain.errors import NotYours, Refused
from gpubot.domain.model import BookingState
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.desk.watch import add_watch, book_watched, my_watches, unwatch, watch_round
from sqlalchemy import text

from tests.engine_kit import deliver, make_engine, simulated_policy


@pytest.fixture
def engine(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    for name in ("a", "b", "c"):
        engine.providers[name].set_stock("a100", f"{name}-1", 0)
    return engine


def _offer_calls(engine) -> int:
    return sum(p.calls["offers"] for p in engine.providers.values())


def test_a_watch_fires_once_when_stock_appears_then_books_exactly_that_offer(engine, clock):
    watch = add_watch(engine, "UALICE", "a100", 4, None, within=timedelta(hours=2))
    assert watch_round(engine) == 0 and engine.notifier.dms == []
    engine.providers["c"].set_stock("a100", "c-1", 4)  # only the dearest cloud has it
    assert watch_round(engine) == 1
    assert watch_round(engine) == 0  # fired watches end: one DM only
    assert deliver(engine) == 1 and deliver(engine) == 0
    [(user, text)] = engine.notifier.dms
    assert user == "UALICE" and "Watch #1: 4× a100 is free on c c-1 at $2.10/GPU-h ($8.40/h)" in text
    assert "for 4h;" in text and "`/gpu book a100x4 --provider c --region c-1`" in text
    assert engine.notifier.dm_actions == [["watch_book"]]
    assert my_watches(engine, "UALICE") == []

    engine.providers["a"].set_stock("a100", "a-1", 8)  # cheaper now, but the button books what was offered
    booked = book_watched(engine, watch.id, "UALICE")
    assert (booked.booking.provider_wanted, booked.booking.region_wanted) == ("c", "c-1")
    assert acquire(engine, booked.booking.id).provider == "c"
    assert book_watched(engine, watch.id, "UALICE").duplicate  # a second click books nothing more


def test_provider_calls_do_not_grow_with_the_number_of_watches(clock, tmp_path):
    calls = {}
    for watchers in (1, 100):
        engine = make_engine(f"sqlite:///{tmp_path / f'w{watchers}.db'}", simulated_policy(), clock)
        for name in ("a", "b", "c"):
            engine.providers[name].set_stock("a100", f"{name}-1", 0)
        for i in range(watchers):
            add_watch(engine, f"U{i:03d}", "a100", 4, None)
        watch_round(engine)
        calls[watchers] = _offer_calls(engine)
    assert calls == {1: 3, 100: 3}  # one probe of the shape per cloud, however many watch it


def test_a_watch_on_one_provider_ignores_the_others(engine):
    add_watch(engine, "UALICE", "a100", 4, "b")
    engine.providers["a"].set_stock("a100", "a-1", 8)
    assert watch_round(engine) == 0
    engine.providers["b"].set_stock("a100", "b-1", 8)
    assert watch_round(engine) == 1 and deliver(engine) == 1 and "on b b-1" in engine.notifier.dms[0][1]


def test_watches_expire_after_their_time_and_say_so_once(engine, clock):
    add_watch(engine, "UALICE", "a100", 4, None, within=timedelta(hours=1))
    clock.advance(hours=1)
    engine.providers["a"].set_stock("a100", "a-1", 8)
    assert watch_round(engine) == 0 and watch_round(engine) == 0
    assert deliver(engine) == 1 and deliver(engine) == 0
    assert engine.notifier.dms == [("UALICE", "Watch #1 (4× a100) ended: no capacity appeared in 1h.")]


def test_the_default_watch_time_comes_from_the_policy(engine):
    watch = add_watch(engine, "UALICE", "a100", 4, None)
    assert watch.expires_at - watch.created_at == timedelta(hours=6)


def test_unwatch_is_for_the_owner_and_only_once(engine):
    watch = add_watch(engine, "UALICE", "a100", 4, None)
    with pytest.raises(NotYours) as refused:
        unwatch(engine, watch.id, "UBOB")
    assert (refused.value.owner, str(refused.value)) == ("UALICE", f"Watch #{watch.id} belongs to UALICE.")
    unwatch(engine, watch.id, "UALICE")
    with pytest.raises(Refused, match="already cancelled"):
        unwatch(engine, watch.id, "UALICE")
    engine.providers["a"].set_stock("a100", "a-1", 8)
    assert watch_round(engine) == 0


def test_a_person_has_at_most_twenty_watches(engine):
    for _ in range(20):
        add_watch(engine, "UALICE", "a100", 1, None)
    with pytest.raises(Refused, match="20 watches"):
        add_watch(engine, "UALICE", "a100", 1, None)


def test_queued_bookings_and_watches_of_one_shape_share_one_probe(engine):
    booking = book(engine, BookingAsk(owner="UBOB", gpu="a100", count=4, duration=timedelta(hours=1))).booking
    assert acquire(engine, booking.id).state == BookingState.QUEUED
    add_watch(engine, "UALICE", "a100", 4, None)
    before = _offer_calls(engine)
    watch_round(engine)
    assert _offer_calls(engine) - before == 3


def test_a_watch_fires_for_its_duration_and_book_now_books_that_duration(engine, clock):
    """`/gpu watch a100x4 2h`: the DM offers 2 h, and Book now books 2 h (not the team's default 4 h)."""
    watch = add_watch(engine, "UALICE", "a100", 4, None, duration=timedelta(hours=2), within=timedelta(days=1))
    assert (watch.duration, watch.expires_at - watch.created_at) == (timedelta(hours=2), timedelta(days=1))
    clock.advance(hours=7)  # past the policy's watch_for (6h): it lives its own day
    engine.providers["a"].set_stock("a100", "a-1", 4)
    assert watch_round(engine) == 1 and deliver(engine) == 1
    [(_user, text)] = engine.notifier.dms
    assert "for 2h;" in text
    booked = book_watched(engine, watch.id, "UALICE")
    assert booked.booking.duration == timedelta(hours=2)
    active = acquire(engine, booked.booking.id)
    assert active.ends_at - active.started_at == timedelta(hours=2)


def test_a_watch_until_a_moment_ends_then(engine, clock):
    until = clock() + timedelta(minutes=90)
    watch = add_watch(engine, "UALICE", "a100", 4, None, duration=timedelta(minutes=30), until=until)
    assert watch.expires_at == until
    clock.advance(minutes=91)
    engine.providers["a"].set_stock("a100", "a-1", 8)
    assert watch_round(engine) == 0 and deliver(engine) == 1
    assert engine.notifier.dms == [("UALICE", "Watch #1 (4× a100) ended: no capacity appeared in 1h30m.")]
    with pytest.raises(Refused, match="in the future"):
        add_watch(engine, "UALICE", "a100", 4, None, until=clock() - timedelta(minutes=1))


def test_a_watch_stored_without_a_duration_books_the_default(engine):
    """Rows from before migration 0016 have no duration: Book now books booking.default_duration, as before."""
    watch = add_watch(engine, "UALICE", "a100", 4, None)
    with engine.db.session() as session:
        session.execute(text("UPDATE watches SET duration_s = NULL WHERE id = :id"), {"id": watch.id})
    engine.providers["a"].set_stock("a100", "a-1", 8)
    assert watch_round(engine) == 1
    assert book_watched(engine, watch.id, "UALICE").booking.duration == engine.policy.booking.default_duration
