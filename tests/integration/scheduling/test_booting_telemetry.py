"""Telemetry around booting: a booting machine's agent is told to keep pushing (409) until the machine is ready;
the "no telemetry" notice and the idle clock start when the machine became reachable, never while it boots, and
silence is never taken for idleness."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.model import BookingState
from gpubot.domain.ports import GpuReading
from gpubot.domain.telemetry import TelemetryRejected
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.agent import issue_agent_token
from gpubot.scheduling.lifecycle.idle import check_idle
from gpubot.scheduling.lifecycle.telemetry import pushing_booking, store_push

from tests.engine_kit import deliver
from tests.integration.scheduling.test_booting import _booked, _engine, _follow_until, _load

QUIET = {"boot_time": "10m", "telemetry": False}  # an agent would push; this cloud reports nothing itself
LIFE = {"health": {"telemetry_stale_after": "5m"}, "idle": {"for": "10m", "grace": "30m"}}


def _dms(engine) -> list[tuple[str, str]]:
    deliver(engine)
    return engine.notifier.dms


def _stale_dms(engine) -> list[str]:
    return [text for _u, text in _dms(engine) if "has sent no GPU telemetry" in text]


def test_a_booting_machine_may_push_and_is_told_to_keep_pushing_until_it_is_ready(database_url, clock):
    engine = _engine(database_url, clock, a=QUIET, **LIFE)
    booking = acquire(engine, _booked(engine).id)
    with engine.db.session() as session:
        token = issue_agent_token(booking.id, session=session)
    with pytest.raises(TelemetryRejected) as refused:
        _push(engine, token)
    assert refused.value.status == 409, "not 401: the agent keeps pushing (gpubot/agent.py)"
    _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=11))
    assert _push(engine, token) == 1


def test_no_telemetry_is_told_once_counted_from_ready_not_from_launch(database_url, clock):
    engine = _engine(database_url, clock, a=QUIET, **LIFE)
    booking = acquire(engine, _booked(engine).id)
    for _ in range(9):  # nine minutes of booting, far past telemetry_stale_after
        clock.advance(minutes=1)
        check_idle(engine)
    assert _stale_dms(engine) == [], "a booting machine is not silent: it is not reachable yet"
    _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=3))
    ready_at = _load(engine, booking.id).ready_at
    while clock() - ready_at < timedelta(minutes=5):
        clock.advance(minutes=1)
        check_idle(engine)
    assert _stale_dms(engine) == [], "within telemetry_stale_after of becoming reachable"
    for _ in range(30):
        clock.advance(minutes=1)
        check_idle(engine)
    assert len(_stale_dms(engine)) == 1
    assert _load(engine, booking.id).state == BookingState.ACTIVE, "silence is not idleness: nothing reclaimed"
    assert not any("has been idle" in text for _u, text in _dms(engine))


def _push(engine, token: str) -> int:
    """What POST /api/telemetry does once the edge validated the body: the token's booking, then the store."""
    return store_push(engine, pushing_booking(engine, token), [GpuReading(0, 0.0, 40.0)], None)


def _push_idle(engine, clock, booking_id: int, minutes: int) -> None:
    for _ in range(minutes):
        clock.advance(minutes=1)
        with engine.db.session() as session:
            telemetry_repo.add_samples(booking_id, [GpuReading(i, 0.0, 40.0) for i in range(4)], clock(),
                                       session=session)
        check_idle(engine)


def test_idle_samples_pushed_while_booting_do_not_count_once_it_is_ready(database_url, clock):
    engine = _engine(database_url, clock, a=QUIET, **LIFE)
    booking = acquire(engine, _booked(engine).id)
    _push_idle(engine, clock, booking.id, 9)
    _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=3))
    _push_idle(engine, clock, booking.id, 9)
    assert not any("has been idle" in text for _u, text in _dms(engine)), \
        "nine idle minutes since it became reachable: the nine before were the boot, not the owner's"
    _push_idle(engine, clock, booking.id, 2)
    assert len([text for _u, text in _dms(engine) if "has been idle for 10m" in text]) == 1
