"""One reconcile pass sorts every tagged instance: kept, adopted or terminated as an orphan; others are ignored."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState, OfferRequest
from gpubot.domain.ports import LaunchSpec
from gpubot.scheduling.acquisition.booting import follow_booting
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.lifecycle.reconcile import reconcile

from tests.engine_kit import deliver, make_engine, running_booking, simulated_policy


@pytest.fixture
def engine(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    engine.providers["a"].set_stock("a100", "a-1", 100)
    return engine


def _launch(engine, booking_id: int, name: str, intent: bool = False):
    """Start an instance on cloud a as if an acquisition of `booking_id` had (with its intent written first)."""
    cloud = engine.providers["a"]
    offer = cloud.offers(OfferRequest("a100", 2))[0]
    if intent:
        with engine.db.session() as session:
            attempt_repo.record_intent(booking_id, offer, name, engine.now(), session=session)
    return cloud.launch(offer, LaunchSpec(booking_id, name))


def _alive(engine) -> set[str]:
    return {i.name for cloud in engine.providers.values() for i in cloud.list_owned()}


def test_a_pass_keeps_running_instances_adopts_launched_ones_and_terminates_orphans(engine, clock):
    kept = [running_booking(engine), running_booking(engine)]
    booked = book(engine, BookingAsk(owner="UBOB", gpu="a100", count=2, duration=timedelta(hours=2))).booking
    with engine.db.session() as session:
        repo.transition(booked.id, [BookingState.REQUESTED, BookingState.QUEUED], BookingState.ACQUIRING,
                        session=session, next_attempt_at=engine.now() + timedelta(minutes=5))
    launched = _launch(engine, booked.id, f"gpubot-{booked.id}-new", intent=True)
    second = _launch(engine, kept[0].id, f"gpubot-{kept[0].id}-dup")  # its booking runs under another name
    unknown = _launch(engine, 999, "gpubot-999-x")
    foreign = _launch(engine, 0, "someone-elses-box")
    clock.advance(minutes=1)

    report = reconcile(engine)

    assert (report.kept, report.adopted) == (2, 1)
    assert sorted(report.orphans) == sorted([second.name, unknown.name])
    assert _alive(engine) == {kept[0].instance_name, kept[1].instance_name, launched.name, foreign.name}
    with engine.db.session() as session:
        adopted = repo.get_booking(booked.id, session=session)
        states = [repo.get_booking(b.id, session=session).state for b in kept]
    # adopted as booting: the follower finds out whether it is reachable, and only then tells its owner
    assert adopted.state == BookingState.BOOTING and adopted.instance_name == launched.name
    assert states == [BookingState.ACTIVE, BookingState.ACTIVE]
    again = reconcile(engine)
    assert (again.kept, again.adopted, again.orphans) == (3, 0, [])
    assert follow_booting(engine) == 1
    with engine.db.session() as session:
        ready = repo.get_booking(booked.id, session=session)
    assert ready.state == BookingState.ACTIVE and ready.connect == f"ssh gpu@{launched.name}.sim.gpubot.local"
    deliver(engine)
    assert [user for user, text in engine.notifier.dms if f"#{booked.id} is ready" in text] == ["UBOB"]
