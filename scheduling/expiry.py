"""Expiry warnings: each configured offset before a booking's end is announced once, with an Extend button."""

from __future__ import annotations

from db import bookings as repo
from domain.durations import format_duration
from domain.model import Booking, BookingState, button_value
from scheduling.engine import Engine

__all__ = ["warn_expiring"]


def warn_expiring(engine: Engine) -> int:
    """DM owners whose bookings end within a reminder offset; returns how many warnings were due."""
    with engine.db.session() as session:
        active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
    return sum(_warn(engine, booking) for booking in active)


def _warn(engine: Engine, booking: Booking) -> bool:
    if booking.ends_at is None:
        return False
    left = booking.ends_at - engine.now()
    due = [o for o in engine.policy.booking.expiry_reminders if left.total_seconds() > 0 and left <= o]
    if not due:
        return False
    offset = min(due)  # only the tightest: after downtime, one warning rather than a burst
    engine.notifier.direct(
        booking.owner, f"⏰ {booking.label} ({booking.count}× {booking.gpu}) ends in {format_duration(left)} "
        f"(at {booking.ends_at:%H:%M} UTC). Extend it to keep working, or save your work.",
        key=f"expiry:{booking.id}:{booking.ends_at.isoformat()}:{int(offset.total_seconds())}",
        actions=[("Extend 1h", "booking_extend", button_value(booking)), ("Release now", "booking_release",
                                                                          button_value(booking))])
    return True
