"""Acquisition over three simulated clouds on a real ledger: fallback, queueing, giving up."""

from __future__ import annotations

from datetime import timedelta

from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.domain.errors import NoCapacity
from gpubot.domain.model import BookingState
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.queue import drain
from gpubot.scheduling.booking.booking import HANDOVER, BookingAsk, book

from tests.engine_kit import deliver, make_engine, simulated_policy


def _ask(gpus: int = 4) -> BookingAsk:
    return BookingAsk(owner="UALICE", gpu="a100", count=gpus, duration=timedelta(hours=6))


def test_falls_back_past_two_clouds_out_of_capacity(database_url, clock):
    policy = simulated_policy(providers={"a": {"kind": "simulated", "latency": 0.3,
                                               "stock": [{"gpu": "a100", "region": "a-1", "count": 8,
                                                          "price": 1.5}]}})
    engine = make_engine(database_url, policy, clock)
    engine.providers["a"].set_stock("a100", "a-1", 0)
    engine.providers["b"].set_stock("a100", "b-1", 4)
    engine.providers["b"].fail_next(NoCapacity("b", "sold out between probe and launch", "region", "b-1"))
    booked = book(engine, _ask())
    placed = acquire(engine, booked.booking.id)
    assert placed.state == BookingState.ACTIVE
    assert placed.provider == "c"
    with engine.db.session() as session:
        outcomes = [(a.provider, a.outcome) for a in attempt_repo.recent_attempts(placed.id, session=session)]
    assert outcomes == [("b", "no_capacity"), ("c", "launched")]
    deliver(engine)
    assert any("b b-1: no capacity" in line and "c c-1" in line for _id, _state, line in engine.notifier.updates)


def test_probes_every_cloud_at_once(database_url, clock):
    slow = {"kind": "simulated", "latency": 0.3}
    policy = simulated_policy(providers={
        name: {**slow, "stock": [{"gpu": "a100", "region": f"{name}-1", "count": 8, "price": price}]}
        for name, price in (("a", 1.5), ("b", 1.8), ("c", 2.1))})
    engine = make_engine(database_url, policy, clock)
    booked = book(engine, _ask())
    probes = [entry for p in engine.providers.values() for entry in p.call_log if entry[0] == "offers"]
    assert len(probes) == 3
    latest_start = max(start for _c, start, _end in probes)
    earliest_end = min(end for _c, _start, end in probes)
    assert latest_start < earliest_end, "the three probes should overlap in time"
    assert booked.quote.best.offer.provider == "a"


def test_queues_when_all_are_out_and_lands_when_stock_appears(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    for name in "abc":
        engine.providers[name].set_stock("a100", f"{name}-1", 0)
    booked = book(engine, _ask())
    queued = acquire(engine, booked.booking.id)
    assert queued.state == BookingState.QUEUED
    with engine.db.session() as session:
        due = repo.list_bookings(session=session, states=[BookingState.QUEUED], due_before=clock())
    assert due == [], "a queued booking waits for its backoff before the next round"
    engine.providers["b"].set_stock("a100", "b-1", 8)
    clock.advance(seconds=61)
    assert drain(engine) == 1
    with engine.db.session() as session:
        landed = repo.get_booking(booked.booking.id, session=session)
    assert landed.state == BookingState.ACTIVE and landed.provider == "b"
    deliver(engine)
    assert any("is ready" in text for _user, text in engine.notifier.dms)


def test_a_fresh_booking_is_left_to_the_request_that_made_it_until_the_handover_passes(database_url, clock):
    # The request posts the booking's message, then starts it: a queue round in between would acquire it with
    # no message to update (the owner would see "Looking for capacity…" for ever).
    engine = make_engine(database_url, simulated_policy(), clock)
    booked = book(engine, _ask())
    assert drain(engine) == 0
    assert _state(engine, booked.booking.id) == BookingState.REQUESTED
    clock.advance(seconds=HANDOVER.total_seconds() + 1)  # the request died before starting it
    assert drain(engine) == 1
    assert _state(engine, booked.booking.id) == BookingState.ACTIVE


def _state(engine, booking_id: int) -> BookingState:
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session).state


def test_gives_up_after_give_up_after_and_alerts(database_url, clock):
    engine = make_engine(database_url, simulated_policy(acquire={"give_up_after": "10m"}), clock)
    for name in "abc":
        engine.providers[name].set_stock("a100", f"{name}-1", 0)
    booking = book(engine, _ask()).booking
    acquire(engine, booking.id)
    for _ in range(20):
        clock.advance(seconds=61)
        drain(engine)
    with engine.db.session() as session:
        final = repo.get_booking(booking.id, session=session)
    assert final.state == BookingState.FAILED
    deliver(engine)
    (kind, _key, said, _resolved), = engine.notifier.alerts
    assert kind == "acquisition_failed" and said.endswith("(owner <@UALICE>)"), said  # a live mention for on-call
    told = [text for user, text in engine.notifier.dms if user == "UALICE" and "given up" in text]
    assert told == [f"#{booking.id} could not be placed and was given up: no offer matched"]
    deliver(engine)
    assert engine.notifier.updates[-1][2].startswith("Gave up: ")


def test_cancel_during_launch_terminates_the_new_instance(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    booking = book(engine, _ask()).booking
    provider = engine.providers["a"]
    original_launch = provider.launch

    def launch_then_cancel(offer, spec):
        instance = original_launch(offer, spec)
        with engine.db.session() as session:
            repo.transition(booking.id, [BookingState.ACQUIRING], BookingState.CANCELLED, session=session)
        return instance

    provider.launch = launch_then_cancel
    acquire(engine, booking.id)
    assert provider.list_owned() == []
