"""The no-process rule in the engine: GPUs no compute process holds are reminded sooner than idle ones, with
their own grace, the same Keep / Snooze; unknown counts never trigger it."""

from __future__ import annotations

import pytest
from gpubot.db import bookings as repo
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.ports import GpuReading
from gpubot.scheduling.lifecycle.idle import check_idle, keep, snooze

from tests.engine_kit import deliver, make_engine, running_booking, simulated_policy

LIFE = {"idle": {"for": "10m", "grace": "30m", "no_process_for": "5m", "no_process_grace": "10m"},
        "health": {"telemetry_stale_after": "5m"}}
NO_PROCESS = "No program has used"


@pytest.fixture
def engine(database_url, clock):
    return make_engine(database_url, simulated_policy(**LIFE), clock)


def _minutes(engine, clock, booking: Booking, minutes: int, util: float, processes: list[int | None]) -> None:
    for _ in range(minutes):
        clock.advance(minutes=1)
        readings = [GpuReading(i, util, 50.0, 10.0, 80.0, count, None if count is None else 500.0 * count)
                    for i, count in enumerate(processes)]
        with engine.db.session() as session:
            telemetry_repo.add_samples(booking.id, readings, engine.now(), session=session)
        check_idle(engine)
        deliver(engine)


def _load(engine, booking_id: int) -> Booking:
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session)


def _dms(engine, words: str) -> list[str]:
    return [text for user, text in engine.notifier.dms if user == "UALICE" and words in text]


def test_a_finished_job_is_reminded_after_5_minutes_and_released_10_later(engine, clock):
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 3, util=95, processes=[1, 1])
    _minutes(engine, clock, booking, 5, util=0, processes=[0, 0])
    assert _dms(engine, NO_PROCESS) == []
    _minutes(engine, clock, booking, 1, util=0, processes=[0, 0])  # 5 minutes since the first sample without one
    [reminder] = _dms(engine, NO_PROCESS)
    assert "finished" in reminder and "released in 10m unless you keep it" in reminder, reminder
    assert engine.notifier.dm_actions[-1] == ["idle_keep", "idle_snooze", "booking_release"]
    assert _load(engine, booking.id).idle_rule == "no_process"
    _minutes(engine, clock, booking, 9, util=0, processes=[0, 0])
    assert _load(engine, booking.id).state == BookingState.ACTIVE and len(_dms(engine, NO_PROCESS)) == 1
    _minutes(engine, clock, booking, 1, util=0, processes=[0, 0])
    assert _load(engine, booking.id).state == BookingState.RELEASED
    assert _dms(engine, "released because its GPUs were idle") and not _dms(engine, "has been idle")


def test_keep_stops_the_reminders_of_that_stretch(engine, clock):
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 6, util=0, processes=[0, 0])
    keep(engine, _load(engine, booking.id))
    _minutes(engine, clock, booking, 60, util=0, processes=[0, 0])
    assert _load(engine, booking.id).state == BookingState.ACTIVE
    assert len(_dms(engine, NO_PROCESS)) == 1 and not _dms(engine, "has been idle")


def test_snooze_pauses_it(engine, clock):
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 6, util=0, processes=[0, 0])
    snooze(engine, _load(engine, booking.id))
    _minutes(engine, clock, booking, 55, util=0, processes=[0, 0])
    assert _load(engine, booking.id).state == BookingState.ACTIVE and len(_dms(engine, NO_PROCESS)) == 1


@pytest.mark.parametrize("processes", [[None, None], [0, None], [0, 1]])
def test_unknown_or_held_gpus_leave_it_to_the_utilisation_rule(engine, clock, processes):
    """An agent that does not report processes (older, or its query failed) or one GPU still held: the idle rule's
    10 minutes and 30 minutes' grace, as before."""
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 9, util=0, processes=processes)
    assert _dms(engine, NO_PROCESS) == [] and _dms(engine, "has been idle") == []
    _minutes(engine, clock, booking, 2, util=0, processes=processes)
    assert len(_dms(engine, "has been idle")) == 1 and _dms(engine, NO_PROCESS) == []
    _minutes(engine, clock, booking, 28, util=0, processes=processes)
    assert _load(engine, booking.id).state == BookingState.ACTIVE


def test_a_process_back_on_idle_gpus_switches_to_the_utilisation_rule_and_its_grace(engine, clock):
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 6, util=0, processes=[0, 0])
    assert len(_dms(engine, NO_PROCESS)) == 1
    _minutes(engine, clock, booking, 5, util=0, processes=[1, 0])  # someone opened a notebook, idle GPUs
    assert len(_dms(engine, "has been idle")) == 1 and _load(engine, booking.id).idle_rule == "idle"
    _minutes(engine, clock, booking, 20, util=0, processes=[1, 0])
    assert _load(engine, booking.id).state == BookingState.ACTIVE, "the idle rule's 30 minutes' grace, not 10"


def test_the_counts_are_stored_with_the_sample(engine, clock):
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 1, util=0, processes=[2, None])
    with engine.db.session() as session:
        latest = telemetry_repo.latest_samples(booking.id, session=session)
    assert [s.processes for s in latest] == [2, None]
