"""Spot preemption rules: when an interrupted machine stopped, how much of its booking is left, and what to do.

A provider may take back a spot (interruptible, preemptible) machine at any time; the owner took that deal for
the lower price, so it is not a fault. The engine bills the booking up to the interruption, tells its owner,
and either books the remaining time again (`[spot] on_preempt = "requeue"`) or just ends it (`"notify"`).

A spot booking that finds no spot capacity for `fallback_after` launches on demand instead (`[spot]
fallback_after`); the engine and the replay both ask `fallback_after` when that is.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Literal

__all__ = ["FALLBACK_FLOOR", "FALLBACK_TIMES", "FALLBACK_WITHOUT_HISTORY", "PREEMPTED", "Aftermath", "aftermath",
           "fallback_after", "falls_back", "interruption_moment", "remaining_after", "resumed_note"]

PREEMPTED = "preempted"  # Instance.status of a machine its provider took back (see domain.ports.Provider)

Aftermath = Literal["requeue", "notify", "nothing_left"]

_RESUMES = re.compile(r"^resumes #\d+(?:: )?")

FALLBACK_TIMES = 3  # a spot booking waits this many times the usual wait for its GPU before it falls back
FALLBACK_FLOOR = timedelta(minutes=30)  # ... and never less: a queue round or two must have had their chance
FALLBACK_WITHOUT_HISTORY = timedelta(hours=1)  # when nothing says how long that GPU usually takes


def interruption_moment(reported: datetime | None, billed_until: datetime | None, started_at: datetime | None,
                        now: datetime) -> datetime:
    """The best known moment a preempted machine stopped, where its billing ends.

    The provider's own time when it gives one, else the last moment the machine was seen running (the end of
    its billed stretches, or its start): never before what is already billed (the ledger only grows), never
    after now."""
    floor = billed_until or started_at or now
    if reported is None:
        return min(floor, now)
    return min(max(reported, floor), now)


def remaining_after(ends_at: datetime | None, moment: datetime, duration: timedelta) -> timedelta:
    """The booked time left at the interruption: until its end, never negative nor more than it booked."""
    if ends_at is None:
        return duration
    return max(timedelta(0), min(ends_at - moment, duration))


def aftermath(on_preempt: str, remaining: timedelta, min_remaining: timedelta) -> Aftermath:
    """Requeue the remaining time (when the policy says so and enough is left), or only tell the owner."""
    if on_preempt != "requeue":
        return "notify"
    return "requeue" if remaining >= min_remaining and remaining > timedelta(0) else "nothing_left"


def resumed_note(booking_id: int, note: str | None) -> str:
    """The note of the booking that resumes #`booking_id`: `resumes #12`, keeping the owner's own note."""
    own = _RESUMES.sub("", note or "", count=1).strip()
    return f"resumes #{booking_id}" + (f": {own}" if own else "")


def fallback_after(setting: timedelta | None, expected_wait: timedelta | None) -> timedelta:
    """How long a spot booking waits for spot capacity before it launches on demand instead: `setting` (`[spot]
    fallback_after`) when given, else `FALLBACK_TIMES` × the expected wait for its GPU at this hour (at least
    `FALLBACK_FLOOR`; `FALLBACK_WITHOUT_HISTORY` when there is no history)."""
    if setting is not None:
        return setting
    if expected_wait is None:
        return FALLBACK_WITHOUT_HISTORY
    return max(FALLBACK_FLOOR, expected_wait * FALLBACK_TIMES)


def falls_back(waited: timedelta, setting: timedelta | None, expected_wait: timedelta | None) -> bool:
    """Whether a spot booking that has waited `waited` for spot capacity may now launch on demand."""
    return waited >= fallback_after(setting, expected_wait)
