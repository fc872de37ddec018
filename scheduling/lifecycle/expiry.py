"""Expiry: the release of every booking whose end has passed, and the warnings before it. Each configured offset
before a booking's end is announced once, with Extend and Release.

The warning is a notice owed in the outbox (its key names the booking, its end and the offset): the job never
waits for Slack, and a warning owed twice is delivered once. Which offset is due is `domain.expiry`'s rule: only
offsets shorter than the booking's usable time count (no warning at ready)."""

from __future__ import annotations

from gpubot.db import bookings as repo
from gpubot.domain.expiry import due_reminder
from gpubot.domain.model import Booking, BookingState, button_value
from gpubot.domain.notices import ExpiryWarning, ReleaseWhy
from gpubot.scheduling.delivery import tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.billing import finish

__all__ = ["expire_due", "warn_expiring"]


def warn_expiring(engine: Engine) -> int:
    """DM owners whose bookings end within a reminder offset; returns how many warnings were due."""
    with engine.db.session() as session:
        active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
    return sum(_warn(engine, booking) for booking in active)


def _warn(engine: Engine, booking: Booking) -> bool:
    now = engine.now()
    offset = due_reminder(booking.ready_at or booking.started_at, booking.ends_at, now,
                          engine.policy.booking.expiry_reminders)
    if offset is None or booking.ends_at is None:
        return False
    warning = ExpiryWarning(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                            ends_at=booking.ends_at, left=booking.ends_at - now, offset=offset,
                            version=button_value(booking))
    with engine.db.session() as session:
        tell(engine, warning, session=session)
    return True


_EXPIRY_REASON = {BookingState.ACTIVE: ReleaseWhy.EXPIRED, BookingState.BOOTING: ReleaseWhy.EXPIRED_BOOTING}


def expire_due(engine: Engine) -> int:
    """Release every running (or still booting) booking whose end has passed, and retry every release left
    RELEASING (a terminate that failed, a crash) that no thread of this process is carrying out; returns how many."""
    now = engine.now()
    with engine.db.session() as session:
        due = (repo.list_bookings(session=session, states=[BookingState.BOOTING, BookingState.ACTIVE], ending_by=now)
               + [b for b in repo.list_bookings(session=session, states=[BookingState.RELEASING])
                  if b.id not in engine.memory.releasing])  # a release still under way here is not one that failed
    for booking in due:
        finish(engine, booking, _EXPIRY_REASON.get(booking.state, ReleaseWhy.RETRIED))
    return len(due)
