"""A replay trace from the team's own ledger: each booking that ran becomes a job, its telemetry its utilisation.

A booking says when it was asked for, its shape and when it was held; it does not say when its job's work ended.
That is read from its telemetry: the work ends a minute after the last minute whose mean utilisation was at or
above the idle threshold (the GPUs idled after that until the booking was released). A booking with no telemetry
counts as working for as long as it was held.

Pure: bookings and samples in, jobs and per-minute utilisation out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime

from gpubot.domain.model import Booking
from gpubot.domain.replay_trace import TraceJob

__all__ = ["ledger_trace"]

_MINUTE = 60


def _per_minute(started: datetime, samples: Sequence[tuple[int, float, datetime]]) -> list[tuple[int, float]]:
    """(seconds after the start, mean utilisation over the GPUs) per minute with readings, in time order."""
    minutes: dict[int, list[float]] = defaultdict(list)
    for _gpu, util, at in samples:
        offset = int((at - started).total_seconds())
        if offset >= 0:
            minutes[offset // _MINUTE * _MINUTE].append(util)
    return [(t, round(sum(values) / len(values), 2)) for t, values in sorted(minutes.items())]


def ledger_trace(bookings: Sequence[Booking], samples: Mapping[int, Sequence[tuple[int, float, datetime]]],
                 since: datetime, until: datetime, busy_from: float
                 ) -> tuple[list[TraceJob], dict[str, list[tuple[int, float]]]]:
    """Jobs (time 0 = `since`) of the bookings asked for in [since, until) that ran, and their utilisation;
    `busy_from` is the utilisation (%) at or above which the GPUs were working."""
    jobs: list[TraceJob] = []
    util: dict[str, list[tuple[int, float]]] = {}
    for booking in bookings:
        if booking.started_at is None or not since <= booking.requested_at < until:
            continue
        held_until = booking.released_at or min(booking.ends_at or until, until)
        held = int((held_until - booking.started_at).total_seconds())
        minutes = _per_minute(booking.started_at, samples.get(booking.id, ()))
        busy = [t for t, u in minutes if u >= busy_from]
        work = min(held, busy[-1] + _MINUTE) if busy else (held if not minutes else _MINUTE)
        if work <= 0:
            continue
        key = f"#{booking.id}"
        jobs.append(TraceJob(key, int((booking.requested_at - since).total_seconds()), booking.count, booking.gpu,
                             work, booking.owner, booking.project))
        if minutes:
            util[key] = [(t, u) for t, u in minutes if t < work + _MINUTE]
    return sorted(jobs, key=lambda j: (j.submit_s, j.key)), util
