"""Extending a running booking: `booking.max_duration` bounds the whole booking, not each extension."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from gpubot.domain.durations import span
from gpubot.domain.errors import Refused

__all__ = ["Extension", "plan_extension"]


@dataclass(frozen=True)
class Extension:
    """An extension decided: the new end, the booking's whole new length, and whether an admin passed the limit."""

    by: timedelta
    new_end: datetime
    length: timedelta
    limit: timedelta
    past_limit: bool = False


def plan_extension(label: str, started_at: datetime, ends_at: datetime, by: timedelta, max_duration: timedelta,
                   may_pass_limit: bool) -> Extension:
    """Push the end out by `by`; refused when the whole booking would run past `max_duration`, unless
    `may_pass_limit` (an admin), which the result then records."""
    if by <= timedelta(0):
        raise Refused("An extension must be longer than zero; try `/gpu extend {id} 1h`.", id=label.lstrip("#"))
    new_end = ends_at + by
    length = new_end - started_at
    if length <= max_duration:
        return Extension(by, new_end, length, max_duration)
    if may_pass_limit:
        return Extension(by, new_end, length, max_duration, past_limit=True)
    room = max_duration - (ends_at - started_at)
    values = {"label": label, "length": span(length), "limit": span(max_duration), "room": span(room)}
    if room >= timedelta(minutes=1):
        raise Refused("{label} would run {length} in all, over the {limit} limit per booking (booking.max_duration); "
                      "it can be extended by at most {room} more. Book a new slot instead, or ask an admin.", **values)
    raise Refused("{label} would run {length} in all, over the {limit} limit per booking (booking.max_duration); "
                  "it is at the limit, so it cannot be extended. Book a new slot instead, or ask an admin.", **values)
