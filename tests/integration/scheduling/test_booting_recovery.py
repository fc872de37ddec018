"""Booting machines across crashes and replicas: a restarted engine (or a second one on the same ledger) resumes
following them, reconciliation keeps them, and an interrupted give-up is finished and billed to its moment."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.booting import follow_booting
from gpubot.scheduling.lifecycle.reconcile import reconcile

from tests.engine_kit import make_engine
from tests.integration.scheduling.test_booting import (
    TICK,
    _billed_seconds,
    _booked,
    _engine,
    _follow_until,
    _Killed,
    _load,
    _ready_dms,
)


def _restart(engine):
    """A new process on the same ledger, facing the same clouds (they outlive our process)."""
    return make_engine(str(engine.db.engine.url.render_as_string(hide_password=False)), engine.policy,
                       engine.clock, providers=engine.providers)


def test_after_a_crash_while_booting_reconcile_keeps_the_machine_and_the_follower_resumes(database_url, clock):
    engine = _engine(database_url, clock, a={"boot_time": "90s"})
    booking = acquire(engine, _booked(engine).id)
    clock.advance(seconds=20)
    engine = _restart(engine)  # the first process died here

    report = reconcile(engine, exclusive=True)

    assert (report.kept, report.orphans, report.requeued) == (1, [], [])
    assert _load(engine, booking.id).state == BookingState.BOOTING
    assert _billed_seconds(engine, booking.id) == {"a": 20}, "reconcile bills a booting machine like a running one"
    _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=5))
    assert _load(engine, booking.id).state == BookingState.ACTIVE and len(_ready_dms(engine, booking.id)) == 1


def test_a_machine_that_vanished_while_the_bot_was_down_is_replaced_on_the_next_provider(database_url, clock):
    engine = _engine(database_url, clock, a={"boot_time": "10m"})
    booking = acquire(engine, _booked(engine).id)
    clock.advance(minutes=1)
    engine.providers["a"].terminate(engine.providers["a"].list_owned()[0])
    engine = _restart(engine)
    reconcile(engine, exclusive=True)
    assert follow_booting(engine) == 1, "reconcile made its poll due at once"
    landed = _load(engine, booking.id)
    assert landed.state == BookingState.ACTIVE and landed.provider == "b"
    with engine.db.session() as session:
        outcomes = [a.outcome for a in attempt_repo.recent_attempts(booking.id, session=session)]
    assert outcomes == ["launched", "vanished", "launched"]


def test_a_second_replica_resumes_following_and_only_one_polls_each_time(database_url, clock):
    first = _engine(database_url, clock, a={"boot_time": "60s"})
    booking = acquire(first, _booked(first).id)
    second = _restart(first)
    polls = 0
    for _ in range(30):
        clock.advance(seconds=TICK)
        polls += follow_booting(first) + follow_booting(second)  # a leader hand-over: both run the job
        if _load(first, booking.id).state == BookingState.ACTIVE:
            break
    assert _load(first, booking.id).state == BookingState.ACTIVE
    assert polls == _load(first, booking.id).boot_polls == first.providers["a"].calls["describe"]
    assert len(_ready_dms(first, booking.id)) + len(_ready_dms(second, booking.id)) == 1


def test_a_give_up_killed_after_the_terminate_is_finished_and_billed_to_its_moment(database_url, clock):
    engine = _engine(database_url, clock, a={"never_ready": True}, acquire={"ready_timeout": "10m"})
    booking = acquire(engine, _booked(engine).id)
    cloud = engine.providers["a"]
    terminate = cloud.terminate

    def terminate_then_die(instance):
        terminate(instance)
        raise _Killed

    cloud.terminate = terminate_then_die
    with pytest.raises(_Killed):
        _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=15))
    del cloud.terminate
    stuck = _load(engine, booking.id)
    assert stuck.state == BookingState.BOOTING and stuck.released_at == stuck.started_at + timedelta(minutes=10)
    clock.advance(minutes=3)  # the bot was down for three minutes
    engine = _restart(engine)
    reconcile(engine, exclusive=True)
    _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=2))
    landed = _load(engine, booking.id)
    assert landed.state == BookingState.ACTIVE and landed.provider == "b"
    assert _billed_seconds(engine, booking.id)["a"] == 600, "billed to the give-up, not to the restart"
    with engine.db.session() as session:
        outcomes = [a.outcome for a in attempt_repo.recent_attempts(booking.id, session=session)]
        polls = repo.get_booking(booking.id, session=session).boot_polls
    assert outcomes == ["launched", "not_ready", "launched"] and polls == 0
