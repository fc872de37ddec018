"""Expected waits: the median per hour of day in team time, and when to suggest --night."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from gpubot.domain.waits import estimate_wait, held_wait, median_agrees, median_wait, night_hours

BERLIN = ZoneInfo("Europe/Berlin")
NIGHT = night_hours(time(23, 0), time(9, 0))


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=BERLIN)


def _sample(day: int, hour: int, wait_minutes: float) -> tuple[datetime, datetime]:
    asked = _at(day, hour, 5)
    return asked.astimezone(UTC), (asked + timedelta(minutes=wait_minutes)).astimezone(UTC)


def test_the_night_window_wraps_midnight():
    assert frozenset({23, 0, 1, 2, 3, 4, 5, 6, 7, 8}) == NIGHT
    assert night_hours(time(1, 0), time(5, 0)) == frozenset({1, 2, 3, 4})


def test_median_of_the_same_hour_in_team_time_only():
    samples = [_sample(1, 14, 10), _sample(2, 14, 50), _sample(3, 14, 30), _sample(4, 14, 90),
               _sample(2, 15, 1000), _sample(3, 2, 2)]
    estimate = estimate_wait(samples, _at(10, 14, 40).astimezone(UTC), BERLIN, NIGHT)
    assert estimate.samples == 4 and estimate.at_hour == timedelta(minutes=40)  # median of 10, 30, 50, 90
    assert estimate.night_samples == 1 and estimate.at_night == timedelta(minutes=2)
    assert estimate.suggest_night


def test_no_night_hint_at_night_or_when_nights_are_slower():
    samples = [_sample(1, 14, 5), _sample(1, 2, 60)]
    assert not estimate_wait(samples, _at(10, 14).astimezone(UTC), BERLIN, NIGHT).suggest_night
    assert not estimate_wait([_sample(1, 2, 1)], _at(10, 3).astimezone(UTC), BERLIN, NIGHT).suggest_night


def test_an_hour_without_launches_suggests_night_when_nights_had_some():
    estimate = estimate_wait([_sample(1, 1, 3)], _at(10, 14).astimezone(UTC), BERLIN, NIGHT)
    assert estimate.at_hour is None and estimate.suggest_night


def test_median_of_nothing_is_none():
    assert median_wait([]) is None


# --- grounded in what holds the capacity ------------------------------------------------------------------------

NOW_HELD = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _later(hours: float) -> datetime:
    return NOW_HELD + timedelta(hours=hours)


def test_nothing_held_is_not_ours_to_know():
    assert held_wait(NOW_HELD, [], [], 4, timedelta(minutes=1), _later(4)) is None


def test_a_short_median_that_contradicts_six_hours_of_held_bookings_is_left_out():
    wait = held_wait(NOW_HELD, [(_later(6), 8)], [], 4, timedelta(seconds=30), _later(8))
    assert wait.frees_in == timedelta(hours=6) and wait.position == 1 and wait.holders == 1
    assert wait.median is None and not wait.at_least and not wait.too_late


def test_the_queue_ahead_counts_and_a_median_that_agrees_is_kept():
    held = [(_later(1), 4), (_later(2), 4), (_later(5), 8)]
    wait = held_wait(NOW_HELD, held, [4], 4, timedelta(minutes=100), _later(8))
    assert wait.frees_in == timedelta(hours=2) and wait.position == 2  # 4 for the one ahead, then 4 for this one
    assert wait.median == timedelta(minutes=100)


def test_more_than_is_held_frees_no_sooner_than_the_last_holder_ends():
    wait = held_wait(NOW_HELD, [(_later(1), 2), (_later(3), 2)], [], 8, timedelta(hours=3), _later(8))
    assert wait.at_least and wait.frees_in == timedelta(hours=3) and wait.median is None


def test_it_says_when_nothing_frees_before_the_booking_gives_up():
    wait = held_wait(NOW_HELD, [(_later(6), 8)], [], 8, None, _later(4))
    assert wait.too_late and wait.gives_up_in == timedelta(hours=4)


def test_a_median_agrees_within_half_the_wait_or_ten_minutes():
    assert median_agrees(timedelta(hours=4), timedelta(hours=6))
    assert not median_agrees(timedelta(minutes=1), timedelta(hours=6))
    assert median_agrees(timedelta(minutes=12), timedelta(minutes=3))
