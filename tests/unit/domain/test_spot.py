"""Preemption rules: where billing ends, how much time is left, and whether it is booked again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from gpubot.domain.errors import ConfigError
from gpubot.domain.spot import aftermath, fallback_after, falls_back, interruption_moment, remaining_after, resumed_note
from gpubot.providers.registry import policy_from_dict

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
H = timedelta(hours=1)


def test_billing_ends_when_the_provider_says_it_stopped():
    assert interruption_moment(T0 + 2 * H, T0 + H, T0, T0 + 3 * H) == T0 + 2 * H


def test_without_the_providers_time_billing_ends_when_it_was_last_seen_running():
    assert interruption_moment(None, T0 + H, T0, T0 + 3 * H) == T0 + H
    assert interruption_moment(None, None, T0, T0 + 3 * H) == T0  # never billed: nothing to bill


def test_the_moment_never_unbills_nor_runs_past_now():
    assert interruption_moment(T0 + H / 2, T0 + H, T0, T0 + 3 * H) == T0 + H  # already billed to T0+1h
    assert interruption_moment(T0 + 5 * H, T0 + H, T0, T0 + 3 * H) == T0 + 3 * H  # a clock ahead of ours
    assert interruption_moment(None, None, None, T0) == T0


def test_the_remaining_time_counts_from_the_interruption_to_the_bookings_end():
    assert remaining_after(T0 + 6 * H, T0 + 2 * H, 6 * H) == 4 * H
    assert remaining_after(T0 + 6 * H, T0 + 7 * H, 6 * H) == timedelta(0)  # past its end: nothing left
    assert remaining_after(T0 + 9 * H, T0 - H, 6 * H) == 6 * H  # never more than it booked
    assert remaining_after(None, T0, 6 * H) == 6 * H


@pytest.mark.parametrize(("on_preempt", "remaining", "decision"), [
    ("requeue", 4 * H, "requeue"),
    ("requeue", timedelta(minutes=10), "requeue"),  # exactly the minimum still goes back
    ("requeue", timedelta(minutes=9), "nothing_left"),
    ("requeue", timedelta(0), "nothing_left"),
    ("notify", 4 * H, "notify"),
    ("notify", timedelta(0), "notify"),
])
def test_requeue_only_when_the_policy_says_so_and_enough_is_left(on_preempt, remaining, decision):
    assert aftermath(on_preempt, remaining, timedelta(minutes=10)) == decision


def test_the_resuming_booking_names_the_one_it_resumes_and_keeps_the_owners_note():
    assert resumed_note(12, None) == "resumes #12"
    assert resumed_note(12, "llama sweep") == "resumes #12: llama sweep"
    assert resumed_note(13, "resumes #12: llama sweep") == "resumes #13: llama sweep"  # no growing chain
    assert resumed_note(13, "resumes #12") == "resumes #13"


def test_spot_policy_defaults_and_refuses_an_unknown_choice():
    policy = policy_from_dict({})
    assert (policy.spot.on_preempt, policy.spot.min_remaining) == ("requeue", timedelta(minutes=10))
    assert policy_from_dict({"spot": {"on_preempt": "notify", "min_remaining": "30m"}}).spot.on_preempt == "notify"
    assert policy.spot.fallback_after is None  # three usual waits (fallback_after)
    assert policy_from_dict({"spot": {"fallback_after": "45m"}}).spot.fallback_after == timedelta(minutes=45)
    with pytest.raises(ConfigError, match=r"spot\.on_preempt"):
        policy_from_dict({"spot": {"on_preempt": "retry"}})
    with pytest.raises(ConfigError, match="spot_interruptions_per_hour"):
        policy_from_dict({"providers": {"sim": {"kind": "simulated", "spot_interruptions_per_hour": -1}}})


M = timedelta(minutes=1)


def test_a_fallback_setting_wins_over_the_usual_wait():
    assert fallback_after(5 * M, 40 * M) == 5 * M
    assert fallback_after(2 * H, None) == 2 * H


def test_without_a_setting_three_usual_waits_never_under_half_an_hour_and_an_hour_without_history():
    assert fallback_after(None, 20 * M) == 60 * M
    assert fallback_after(None, 2 * M) == 30 * M  # the floor: a queue round or two had their chance
    assert fallback_after(None, None) == 60 * M


@pytest.mark.parametrize(("waited", "setting", "usual", "expected"), [
    (59 * M, None, 20 * M, False),
    (60 * M, None, 20 * M, True),  # exactly three usual waits falls back
    (29 * M, None, None, False),
    (60 * M, None, None, True),
    (10 * M, 10 * M, 3 * H, True),  # the setting, not the long usual wait
    (9 * M, 10 * M, None, False),
])
def test_a_spot_booking_falls_back_once_it_has_waited_that_long(waited, setting, usual, expected):
    assert falls_back(waited, setting, usual) is expected
