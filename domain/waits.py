"""Peak awareness: the expected wait for a GPU at an hour of the day, from how long acquisitions took."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, time, timedelta, tzinfo

__all__ = ["WaitEstimate", "estimate_wait", "median_wait", "night_hours"]

WaitSample = tuple[datetime, datetime]  # (requested at, launched at), both aware


@dataclass(frozen=True)
class WaitEstimate:
    """Median wait at this hour and at night (None without samples), and whether to suggest `--night`."""

    at_hour: timedelta | None
    samples: int
    at_night: timedelta | None
    night_samples: int
    suggest_night: bool


def night_hours(start: time, end: time) -> frozenset[int]:
    """Hours of the day (team time) that start inside the night window `start`–`end` (it may wrap midnight)."""
    hours = range(start.hour, end.hour) if start.hour < end.hour else [*range(start.hour, 24), *range(end.hour)]
    return frozenset(hours)


def median_wait(samples: list[WaitSample]) -> timedelta | None:
    """The median time from request to launch, or None for no samples."""
    if not samples:
        return None
    return timedelta(seconds=statistics.median((done - asked).total_seconds() for asked, done in samples))


def estimate_wait(samples: list[WaitSample], now: datetime, tz: tzinfo, night: frozenset[int]) -> WaitEstimate:
    """Median wait of requests made in the same hour of day as `now` (team time) and of those made at night.

    `--night` is suggested when it is not night now and night requests waited less than this hour's, or
    when this hour has no launched request while the night has some.
    """
    hour = now.astimezone(tz).hour
    same = [s for s in samples if s[0].astimezone(tz).hour == hour]
    dark = [s for s in samples if s[0].astimezone(tz).hour in night]
    here, there = median_wait(same), median_wait(dark)
    better = there is not None and (here is None or there < here)
    return WaitEstimate(here, len(same), there, len(dark), hour not in night and better)
