"""Billing across a crash: a release interrupted by a crash is finished by reconcile and billed exactly once.

Found by the crash trials (tests/reliability/test_crash_trials.py): a restart used to bill an already stopped
instance up to the restart, and to treat an interrupted release whose instance still ran as an orphan, billing
it a second time from its launch intent.
"""

from __future__ import annotations

import itertools
import threading
from datetime import datetime, timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.db.tables.billing import UsageIntervalRow
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import ReleaseWhy
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.lifecycle.reconcile import reconcile
from gpubot.scheduling.money.billing import accrue_all, finish, instance_of
from sqlmodel import select

from tests.engine_kit import deliver, make_engine, running_booking, simulated_policy


@pytest.fixture
def engine(database_url, clock):
    return make_engine(database_url, simulated_policy(), clock)


def _stretches(engine, booking: Booking) -> list[tuple]:
    with engine.db.session() as session:
        rows = session.exec(select(UsageIntervalRow).where(UsageIntervalRow.booking_id == booking.id)
                            .order_by(UsageIntervalRow.start)).all()
        return [(r.start, r.end, r.note) for r in rows]


def _interrupt_release(engine, booking: Booking) -> None:
    """What `finish` writes before it calls terminate; the crash comes right after."""
    with engine.db.session() as session:
        repo.transition(booking.id, [BookingState.ACTIVE], BookingState.RELEASING, session=session,
                        released_at=engine.now())


def _state(engine, booking: Booking) -> BookingState:
    with engine.db.session() as session:
        return repo.get_booking(booking.id, session=session).state


def test_a_release_killed_after_the_provider_stopped_is_billed_to_the_stop_not_the_restart(engine, clock):
    booking = running_booking(engine)
    clock.advance(hours=1)
    stopped = engine.now()
    _interrupt_release(engine, booking)
    engine.providers[booking.provider].terminate(instance_of(booking))
    clock.advance(minutes=10)  # the process is down for ten minutes
    reconcile(engine, exclusive=True)
    assert _state(engine, booking) == BookingState.RELEASED
    spans = _stretches(engine, booking)
    assert spans[0][0] == booking.started_at and spans[-1][1] == stopped


def test_a_release_killed_before_terminate_is_finished_not_orphaned_and_billed_once(engine, clock):
    booking = running_booking(engine)
    clock.advance(hours=1)
    reconcile(engine)  # an earlier pass billed the first hour
    clock.advance(minutes=30)
    _interrupt_release(engine, booking)
    clock.advance(minutes=5)
    report = reconcile(engine, exclusive=True)
    assert report.orphans == [] and _state(engine, booking) == BookingState.RELEASED
    assert engine.providers[booking.provider].list_owned() == []
    spans = _stretches(engine, booking)
    assert [note for *_times, note in spans] == [None, None]
    assert spans[0][1] == spans[1][0], "stretches must touch, never overlap"
    assert spans[-1][1] == engine.now()
    deliver(engine)
    assert not any(kind == "orphan" for kind, *_rest in engine.notifier.alerts)


def test_a_vanished_instance_is_billed_to_when_it_was_last_seenrunning_booking(engine, clock):
    booking = running_booking(engine)
    clock.advance(hours=1)
    reconcile(engine)
    seen = engine.now()
    engine.providers[booking.provider].terminate(instance_of(booking))  # gone behind our back
    clock.advance(minutes=5)
    report = reconcile(engine)
    assert report.lost == [booking.id] and _state(engine, booking) == BookingState.RELEASED
    assert _stretches(engine, booking)[-1][1] == seen


def test_a_release_finishing_while_a_pass_lists_is_not_an_orphan_and_not_billed_again(engine, clock):
    """Found by the full crash run: a periodic pass listed an instance, a release then ended it, and the pass
    billed it again as an orphan from its launch intent."""
    from gpubot.scheduling.booking.booking import release
    from gpubot.scheduling.lifecycle.reconcile import ReconcileReport, _settle_instance

    booking = running_booking(engine)
    listed = engine.providers[booking.provider].list_owned()  # the pass lists...
    clock.advance(minutes=20)
    release(engine, booking.id, booking.owner)  # ...the owner releases...
    report = ReconcileReport()
    _settle_instance(engine, listed[0], report)  # ...and the pass settles what it listed
    deliver(engine)
    assert report.orphans == [] and not any(kind == "orphan" for kind, *_rest in engine.notifier.alerts)
    assert len(_stretches(engine, booking)) == 1


def test_a_booking_placed_while_a_pass_lists_is_not_lost(engine, clock):
    booking = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=1, duration=timedelta(hours=1)))
    clock.advance(seconds=1)

    def acquire_during_listing():  # the acquisition lands between the listing and the booking query
        acquire(engine, booking.booking.id)
        return []

    for provider in engine.providers.values():
        provider.list_owned = acquire_during_listing if provider is engine.providers["a"] else (lambda: [])
    report = reconcile(engine)
    assert report.lost == [] and _state(engine, booking.booking) == BookingState.ACTIVE


class _TickingClock:
    """A wall clock in miniature: every reading is 1 ms after the one before, whichever thread reads it."""

    def __init__(self, start: datetime) -> None:
        self._now, self._lock = start, threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            self._now += timedelta(milliseconds=1)
            return self._now


def test_a_billing_pass_that_read_bookings_as_running_bills_none_past_its_release(database_url, clock):
    """Reconcile bills the bookings it listed as running, up to its own now; releases land between its read and
    its write (the fresh-clone CI run that billed 41 ms past a release). Racing billing passes over a stale list
    against the releases, and one more pass after them all: every stretch ends by the release, none overlap."""
    ticking = _TickingClock(clock())
    engine = make_engine(database_url, simulated_policy(), ticking)
    running = [running_booking(engine) for _ in range(4)]
    done = threading.Event()
    passes = 0

    def bill_over_and_over() -> None:
        nonlocal passes
        while not done.is_set():
            accrue_all(engine, running)
            passes += 1

    biller = threading.Thread(target=bill_over_and_over)
    biller.start()
    try:
        for booking in running:
            finish(engine, booking, ReleaseWhy.RELEASED)
    finally:
        done.set()
        biller.join(30)
    accrue_all(engine, running)  # a pass that listed them all as running before the releases
    assert passes > 0
    for booking in running:
        closed = _booking(engine, booking)
        spans = _stretches(engine, booking)
        assert closed.state == BookingState.RELEASED
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans)), "stretches touch, never overlap"
        assert spans[-1][1] == closed.released_at, f"#{booking.id} billed to {spans[-1][1]}, not {closed.released_at}"


def _booking(engine, booking: Booking) -> Booking:
    with engine.db.session() as session:
        return repo.get_booking(booking.id, session=session)


def test_a_close_that_another_close_beat_returns_the_booking_as_the_ledger_holds_it(engine, clock):
    booking = running_booking(engine)
    clock.advance(hours=1)
    stale = booking.with_(state=BookingState.RELEASING)  # what a second closer read before the first one closed
    first = finish(engine, stale, ReleaseWhy.RELEASED)
    clock.advance(minutes=10)
    second = finish(engine, stale, ReleaseWhy.RELEASED)
    with engine.db.session() as session:
        held = repo.get_booking(booking.id, session=session)
    assert first.released_at == held.released_at == second.released_at
    assert second.state == held.state == BookingState.RELEASED
    assert len(_stretches(engine, booking)) == 1  # billed once, to the first close


def test_the_expiry_job_leaves_a_release_under_way_to_its_thread_and_the_owner_hears_why(database_url, clock):
    """The idle release of a machine whose terminate is slow: the expiry job's tick meanwhile retries only releases
    that failed, so it neither closes this one nor tells the owner it was a retry."""
    from gpubot.domain.notices import BookingReleased
    from gpubot.providers.registry import policy_from_dict
    from gpubot.scheduling.lifecycle.expiry import expire_due

    policy = policy_from_dict({"providers": {"sim": {"kind": "simulated", "latency": "1s", "stock": [
        {"gpu": "a100", "region": "sim-1", "count": 8, "price": 2.0}]}}})
    in_terminate, carry_on = threading.Event(), threading.Event()
    carry_on.set()

    def provider_latency(_seconds: float) -> None:  # no wait, but while the test looks the cloud's answer is held
        if not carry_on.is_set():
            in_terminate.set()
            carry_on.wait(2)

    engine = make_engine(database_url, policy, clock, sleep=provider_latency)
    booking = running_booking(engine)
    carry_on.clear()
    releasing = threading.Thread(target=finish, args=(engine, booking, ReleaseWhy.IDLE))
    releasing.start()
    assert in_terminate.wait(5)
    assert expire_due(engine) == 0  # the release under way is not one to retry
    carry_on.set()
    releasing.join(5)
    assert _state(engine, booking) == BookingState.RELEASED
    deliver(engine)
    released = [n for n in engine.notifier.notices if isinstance(n, BookingReleased)]
    assert [n.why for n in released] == [ReleaseWhy.IDLE]
    expired_again = finish(engine, booking.with_(state=BookingState.RELEASING), ReleaseWhy.RETRIED)
    assert expired_again.state == BookingState.RELEASED  # and a later retry finds it closed
