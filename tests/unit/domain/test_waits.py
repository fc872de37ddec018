"""Expected waits: the median per hour of day in team time, and when to suggest --night."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from gpubot.domain.waits import estimate_wait, median_wait, night_hours

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
