"""Decide-and-hold against budgets, in one atomic step (db.locks), at booking time and again at launch.

A booking holds its estimate from the moment it is booked. When it is about to launch — at once, or hours later
when it was scheduled or queued — budgets and prices may have changed, so acquisition checks it again: the
cheapest offer it could take must still fit, else it is held for an admin or refused as `over_budget` says and
its owner is told why; and before each launch the offer tried becomes its hold, refused (the next offer is tried)
when that price would pass a budget. Admins' bookings, approved ones and `over_budget = "warn"` go ahead.
"""

from __future__ import annotations

from decimal import Decimal

from gpubot.db import bookings as repo
from gpubot.db.locks import lock_budgets
from gpubot.domain.budget import BudgetLine, Passed, over_budget_decision, passed_budgets
from gpubot.domain.commitment import lock_keys
from gpubot.domain.model import Booking, BookingState, Offer
from gpubot.domain.money import format_money
from gpubot.domain.notices import ApprovalNeeded, LaunchHeld
from gpubot.scheduling.delivery import move_booking, tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.costs import budget_lines, offer_total
from sqlmodel import Session

__all__ = ["hold_offer", "locked_lines", "over_text", "recheck_at_launch", "tell_admins"]


def locked_lines(engine: Engine, owner: str, project: str | None, *, session: Session,
                 excluding: int | None = None) -> list[BudgetLine]:
    """Take the budget locks of a booking's scopes, then read their lines: what is decided from them and written
    in the same session cannot race another booking's decision (one replica or several)."""
    overrides = lock_budgets(lock_keys(owner, project), session=session)  # read with the locks: one statement
    return budget_lines(engine, owner, project, session=session, excluding=excluding, overrides=overrides)


def over_text(passed: tuple[Passed, ...], currency: str) -> str:
    """`team would reach $36.00 of $20.00; user:U1 would reach …`, in English for the ledger's failure column (people
    read the `passed` facts worded by the bot)."""
    return "; ".join(f"{p.scope} would reach {format_money(p.reach, currency)} of {format_money(p.limit, currency)}"
                     for p in passed)


def _exempt(engine: Engine, booking: Booking) -> bool:
    return bool(booking.approved_by) or engine.is_admin(booking.owner)


def recheck_at_launch(engine: Engine, booking: Booking, offers: list[Offer]) -> tuple[Booking | None, Decimal | None]:
    """(None, what it now holds) when an acquiring booking may launch on one of `offers` (the hold: the cheapest
    of them, None when it decided nothing); else it is held for approval or refused (its owner told why) and
    returned in its new state."""
    mode = engine.policy.budget.over_budget
    if mode == "warn" or not offers or _exempt(engine, booking):
        return None, None
    cheapest = min(offer_total(engine, offer, booking.duration) for offer in offers)
    with engine.db.session() as session:
        lines = locked_lines(engine, booking.owner, booking.project, session=session, excluding=booking.id)
        if over_budget_decision(lines, cheapest, mode, is_admin=False) == "ok":
            repo.set_fields(booking.id, session=session, estimate=cheapest)
            return None, cheapest
        passed = passed_budgets(lines, cheapest)
        held = mode == "approve"
        to_state = BookingState.AWAITING_APPROVAL if held else BookingState.FAILED
        failure = f"over budget at launch: {over_text(passed, engine.currency)}"[:500]
        fields = {"estimate": cheapest, "next_attempt_at": None} if held else {
            "failure": failure, "released_at": engine.now()}
        if not move_booking(engine, booking, [BookingState.ACQUIRING], to_state, session=session, **fields):
            return repo.get_booking(booking.id, session=session), None
        stopped = repo.get_booking(booking.id, session=session)
        _tell(engine, stopped, passed, held, session=session)
    return stopped, None


def hold_offer(engine: Engine, booking: Booking, offer: Offer, holding: Decimal | None = None) -> bool:
    """Make `offer`'s cost the booking's hold just before it is launched; False (nothing held) when that would
    pass a budget the booking must keep to. An offer that costs no more than what is held already (the launch
    re-check holds the cheapest: `holding`, when the caller knows it, else read) needs no new decision."""
    if engine.policy.budget.over_budget == "warn":
        return True
    cost = offer_total(engine, offer, booking.duration)
    if holding is not None and cost <= holding:
        return True
    with engine.db.session() as session:
        held = repo.get_booking(booking.id, session=session)
        if held is not None and held.estimate is not None and cost <= held.estimate:
            return True
    with engine.db.session() as session:
        lines = locked_lines(engine, booking.owner, booking.project, session=session, excluding=booking.id)
        over = over_budget_decision(lines, cost, engine.policy.budget.over_budget, is_admin=False) != "ok"
        if over and not _exempt(engine, booking):
            return False
        repo.set_fields(booking.id, session=session, estimate=cost)
    return True


def _tell(engine: Engine, booking: Booking, passed: tuple[Passed, ...], held: bool, *, session: Session) -> None:
    """The owner (and, for an approval, the admins) learn why a booking did not launch."""
    tell(engine, LaunchHeld(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                            passed=passed, currency=engine.currency, held=held), session=session)
    if held:
        tell_admins(engine, booking, passed, session=session)


def tell_admins(engine: Engine, booking: Booking, passed: tuple[Passed, ...], *, session: Session) -> None:
    """Ask every admin, in `session`'s transaction, to approve or deny `booking` (over budget: it would pass the
    `passed` budgets); once per booking and admin."""
    for admin in engine.policy.team.admins:
        tell(engine, ApprovalNeeded(to=admin, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                                    owner=booking.owner, duration=booking.duration, passed=passed,
                                    currency=engine.currency), session=session)
