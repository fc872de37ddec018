"""Over-budget approvals: an admin approves (the booking goes ahead) or denies (it is cancelled)."""

from __future__ import annotations

from gpubot.db import bookings as repo
from gpubot.domain.errors import Forbidden, NotFound, Refused
from gpubot.domain.model import Booking, BookingState
from gpubot.scheduling.acquisition.queue import start_now
from gpubot.scheduling.engine import Engine

__all__ = ["approve", "ask_admins", "deny"]


def _decide(engine: Engine, booking_id: int, admin: str, to_state: BookingState, **fields: object) -> Booking:
    if not engine.is_admin(admin):
        raise Forbidden("Only team admins can approve or deny over-budget bookings.")
    with engine.db.session() as session:
        moved = repo.transition(booking_id, [BookingState.AWAITING_APPROVAL], to_state, session=session, **fields)
        booking = repo.get_booking(booking_id, session=session)
    if booking is None:
        raise NotFound(f"There is no booking #{booking_id}.")
    if not moved:
        raise Refused(f"#{booking_id} was already decided (it is {booking.state.value}).")
    return booking


def approve(engine: Engine, booking_id: int, admin: str) -> Booking:
    """Let an over-budget booking go ahead, and acquire it now (its launch is not held against budgets again)."""
    booking = _decide(engine, booking_id, admin, BookingState.REQUESTED, approved_by=admin)
    engine.notifier.direct(booking.owner, f"{booking.label} was approved by <@{admin}>; acquiring now.",
                           key=f"approved:{booking_id}")
    engine.notifier.booking_updated(booking, f"Approved by <@{admin}>.")
    return start_now(engine, booking)


def deny(engine: Engine, booking_id: int, admin: str) -> Booking:
    """Refuse an over-budget booking: it is cancelled (its hold released) and the requester told who decided."""
    booking = _decide(engine, booking_id, admin, BookingState.CANCELLED, released_at=engine.now())
    engine.notifier.direct(booking.owner, f"{booking.label} was denied by <@{admin}> (over budget).",
                           key=f"denied:{booking_id}")
    engine.notifier.booking_updated(booking, f"Denied by <@{admin}>.")
    return booking


def ask_admins(engine: Engine, booking: Booking, summary: str, blocks: list) -> None:
    """DM every admin the approval request (once per booking and admin)."""
    for admin in engine.policy.team.admins:
        engine.notifier.direct(admin, summary, blocks=blocks, key=f"approval:{booking.id}:{admin}")
