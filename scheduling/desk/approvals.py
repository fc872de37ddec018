"""Over-budget approvals: an admin approves (the booking goes ahead) or denies (it is cancelled)."""

from __future__ import annotations

from gpubot.db import bookings as repo
from gpubot.domain.errors import Forbidden, NotFound, Refused
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import ApprovalDecided
from gpubot.scheduling.acquisition.queue import start_now
from gpubot.scheduling.delivery import move_booking, tell
from gpubot.scheduling.engine import Engine

__all__ = ["approve", "deny"]


def _decide(engine: Engine, booking_id: int, admin: str, to_state: BookingState, **fields: object) -> Booking:
    """Move an awaiting booking to `to_state` and, in the same transaction, tell its owner who decided."""
    if not engine.is_admin(admin):
        raise Forbidden("Only team admins can approve or deny over-budget bookings.")
    with engine.db.session() as session:
        booking = repo.get_booking(booking_id, session=session)
        if booking is None:
            raise NotFound("There is no booking #{booking}.", booking=booking_id)
        moved = move_booking(engine, booking, [BookingState.AWAITING_APPROVAL], to_state, session=session, **fields)
        if moved:
            tell(engine, ApprovalDecided(to=booking.owner, booking_id=booking.id, gpu=booking.gpu,
                                         count=booking.count, admin=admin,
                                         approved=to_state is BookingState.REQUESTED), session=session)
        booking = repo.get_booking(booking_id, session=session)  # as this decision, or an earlier one, left it
    if not moved:
        raise Refused("#{booking} was already decided (it is {state}).", booking=booking_id,
                      state=booking.state.value)
    return booking


def approve(engine: Engine, booking_id: int, admin: str) -> Booking:
    """Let an over-budget booking go ahead, and acquire it now (its launch is not held against budgets again)."""
    return start_now(engine, _decide(engine, booking_id, admin, BookingState.REQUESTED, approved_by=admin))


def deny(engine: Engine, booking_id: int, admin: str) -> Booking:
    """Refuse an over-budget booking: it is cancelled (its hold released) and the requester told who decided."""
    return _decide(engine, booking_id, admin, BookingState.CANCELLED, released_at=engine.now())
