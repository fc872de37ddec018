"""Peak awareness: the expected wait for a GPU at an hour of the day, from how long acquisitions took."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, time, timedelta, tzinfo

__all__ = ["HeldWait", "WaitEstimate", "estimate_wait", "held_wait", "median_agrees", "median_wait", "night_hours"]

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


@dataclass(frozen=True)
class HeldWait:
    """When the GPUs the team's running bookings hold free up enough for a queued booking and those ahead of it.

    `frees_in` is from now; `at_least` when even every held GPU freed is fewer than needed (then it is when the
    last holder ends, and the rest must come from elsewhere); `position` is 1 for the first in the queue;
    `median` is the historical median only when it agrees with `frees_in`; `too_late` when that moment comes
    after the booking gives up, `gives_up_in` from now."""

    frees_in: timedelta
    at_least: bool
    holders: int
    position: int
    median: timedelta | None
    too_late: bool
    gives_up_in: timedelta


def median_agrees(median: timedelta, frees_in: timedelta) -> bool:
    """Whether a historical median tells the same story as the held bookings: within half of it, or 10 minutes."""
    return abs(median - frees_in) <= max(frees_in / 2, timedelta(minutes=10))


def held_wait(now: datetime, held: list[tuple[datetime, int]], ahead: list[int], wanted: int,
              median: timedelta | None, gives_up_at: datetime) -> HeldWait | None:
    """When enough of the GPUs held (`held`: each holder's end and GPU count) free for the bookings queued ahead
    (their GPU counts) and then this one (`wanted`); None when nothing is held (the wait is not ours to know)."""
    if not held:
        return None
    need, freed, frees_at = sum(ahead) + wanted, 0, None
    ordered = sorted(held)
    for end, gpus in ordered:
        freed += gpus
        if freed >= need:
            frees_at = end
            break
    at_least = frees_at is None
    frees_in = max((frees_at or ordered[-1][0]) - now, timedelta(0))
    agreeing = median if median is not None and not at_least and median_agrees(median, frees_in) else None
    return HeldWait(frees_in, at_least, len(held), len(ahead) + 1, agreeing, now + frees_in > gives_up_at,
                    max(gives_up_at - now, timedelta(0)))
