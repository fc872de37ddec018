"""The rule that follows a booting machine: jittered, capped exponential polls that end on the deadline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.domain.booting import burst_due, burst_target, is_reachable, next_poll_at, poll_delay, timed_out
from gpubot.domain.model import Instance, Offer
from hypothesis import given
from hypothesis import strategies as st

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
BASE, CAP, TIMEOUT = timedelta(seconds=5), timedelta(seconds=30), timedelta(minutes=15)


def test_the_step_doubles_from_the_base_until_the_cap():
    steps = [poll_delay(n, BASE, CAP, draw=1.0).total_seconds() for n in range(6)]
    assert steps == [5, 10, 20, 30, 30, 30]


def test_the_jitter_draws_between_half_the_step_and_the_whole_step():
    assert poll_delay(1, BASE, CAP, draw=0.0) == timedelta(seconds=5)
    assert poll_delay(1, BASE, CAP, draw=0.5) == timedelta(seconds=7.5)
    assert poll_delay(1, BASE, CAP, draw=1.0) == timedelta(seconds=10)


@given(polls=st.integers(0, 10_000), draw=st.floats(0, 1))
def test_every_delay_lies_within_half_a_capped_step_and_the_cap(polls, draw):
    delay = poll_delay(polls, BASE, CAP, draw)
    step = min(CAP, BASE * 2 ** min(polls, 30))
    assert step / 2 <= delay <= step <= CAP


@pytest.mark.parametrize(("polls", "draw"), [(-1, 0.5), (0, -0.1), (0, 1.5)])
def test_nonsense_is_refused(polls, draw):
    with pytest.raises(ValueError):
        poll_delay(polls, BASE, CAP, draw)


def test_the_last_poll_lands_exactly_on_the_deadline():
    now = T0 + TIMEOUT - timedelta(seconds=4)
    assert next_poll_at(T0, now, 9, timeout=TIMEOUT, base=BASE, cap=CAP, draw=1.0) == T0 + TIMEOUT
    past = T0 + TIMEOUT + timedelta(seconds=3)
    assert next_poll_at(T0, past, 9, timeout=TIMEOUT, base=BASE, cap=CAP, draw=1.0) == past


def _polls_until(ready_after: timedelta, draw: float) -> int:
    """How many describes it takes to see a machine that becomes reachable `ready_after` its launch."""
    at, polls = next_poll_at(T0, T0, 0, timeout=TIMEOUT, base=BASE, cap=CAP, draw=draw), 1
    while at - T0 < ready_after:
        at, polls = next_poll_at(T0, at, polls, timeout=TIMEOUT, base=BASE, cap=CAP, draw=draw), polls + 1
    return polls


def test_a_machine_that_takes_90s_is_asked_a_handful_of_times_not_every_tick():
    """With the defaults (5 s doubling to 30 s): 5 polls at the longest draws, 8 at the shortest."""
    assert [_polls_until(timedelta(seconds=90), draw) for draw in (1.0, 0.5, 0.0)] == [5, 6, 8]


def test_one_that_never_boots_is_asked_32_to_62_times_before_the_15m_timeout():
    assert [_polls_until(TIMEOUT, draw) for draw in (1.0, 0.5, 0.0)] == [32, 42, 62]


def test_a_timeout_is_reached_at_the_deadline_not_before():
    assert not timed_out(T0, T0 + TIMEOUT - timedelta(microseconds=1), TIMEOUT)
    assert timed_out(T0, T0 + TIMEOUT, TIMEOUT)


def test_reachable_means_ready_with_a_way_in():
    booting = Instance("lambda", "i-1", "gpubot-1-ab", status="booting")
    assert not is_reachable(booting)
    assert not is_reachable(Instance("lambda", "i-1", "gpubot-1-ab", status="active", ready=True))
    assert is_reachable(Instance("lambda", "i-1", "gpubot-1-ab", status="active", ready=True, ssh="ssh ubuntu@h"))


def _offer(provider: str, available: bool = True, queued: bool = False) -> Offer:
    return Offer(provider, "r", "a100", 4, Decimal("1"), "USD", available=available, queued=queued)


def test_a_queued_job_bursts_only_after_burst_after() -> None:
    launched = datetime(2026, 12, 5, 4, 0, tzinfo=UTC)
    assert not burst_due(launched, launched + timedelta(minutes=9, seconds=59), timedelta(minutes=10))
    assert burst_due(launched, launched + timedelta(minutes=10), timedelta(minutes=10))
    assert not burst_due(launched, launched + timedelta(days=1), None)  # unset: never


def test_a_queued_job_bursts_to_another_provider_with_the_gpus_free_now_else_keeps_its_place() -> None:
    lab, other_full, cloud = _offer("lab", queued=True), _offer("lab2", queued=True), _offer("sim")
    assert burst_target([lab, other_full, cloud], "lab") == cloud
    assert burst_target([lab, other_full], "lab") is None  # another cluster as full: no burst
    assert burst_target([lab, _offer("sim", available=False)], "lab") is None
    assert burst_target([_offer("lab"), lab], "lab") is None  # its own provider never counts
