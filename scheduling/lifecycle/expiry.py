"""Expiry warnings: each configured offset before a booking's end is announced once, with Extend and Release.

The warning is a notice owed in the outbox (its key names the booking, its end and the offset): the job never
waits for Slack, and a warning owed twice is delivered once."""

from __future__ import annotations

from gpubot.db import bookings as repo
from gpubot.domain.model import Booking, BookingState, button_value
from gpubot.domain.notices import ExpiryWarning
from gpubot.scheduling.delivery import tell
from gpubot.scheduling.engine import Engine

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
    warning = ExpiryWarning(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                            ends_at=booking.ends_at, left=left, offset=offset, version=button_value(booking))
    with engine.db.session() as session:
        tell(engine, warning, session=session)
    return True
