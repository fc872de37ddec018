"""Expiry reminders: which configured offset before a booking's end is due now, if any.

An offset applies only to a booking whose usable time (from when it became ready, else from its launch, to its
end) is longer than the offset, so a 30-minute booking is never told "ends in 29m58s" the moment it is ready: it
gets only the shorter reminders that fall inside it. Of several offsets due at once (after downtime) only the
tightest is owed, so a person gets one warning rather than a burst.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

__all__ = ["due_reminder"]


def due_reminder(began: datetime | None, ends_at: datetime | None, now: datetime,
                 offsets: Iterable[timedelta]) -> timedelta | None:
    """The tightest offset due at `now` for a booking usable from `began` until `ends_at`, or None."""
    if began is None or ends_at is None or ends_at <= now:
        return None
    left = ends_at - now
    due = [offset for offset in offsets if left <= offset < ends_at - began]
    return min(due) if due else None
