"""Booking use cases: book, cancel, release, extend. Each loads, decides with domain rules, saves."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.db import bookings as repo
from gpubot.db import effects
from gpubot.domain.budget import BudgetLine, Passed, over_budget_decision, passed_budgets
from gpubot.domain.commitment import HELD_STATES
from gpubot.domain.errors import NotFound, NotYours, OverBudget, Refused
from gpubot.domain.extension import Extension, plan_extension
from gpubot.domain.model import ACTIVE_STATES, FINAL_STATES, Booking, BookingState, OfferRequest, Shape
from gpubot.domain.notices import BookingCancelled, BookingExtended, ReleaseWhy, to_record
from gpubot.domain.replacing import count_gpus
from gpubot.scheduling.booking.extension import extend_hold, extension_budget, extension_cost
from gpubot.scheduling.booking.quotes import PricedOffer, Quote, quote
from gpubot.scheduling.booking.requested import requested_notice
from gpubot.scheduling.booking.shapes import nothing_sells
from gpubot.scheduling.delivery import move_booking, tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.billing import finish
from gpubot.scheduling.money.holds import locked_lines, tell_admins

__all__ = ["Booked", "BookingAsk", "Extended", "book", "bookings_of", "cancel", "extend", "load_for", "release"]

WAITING = frozenset({BookingState.REQUESTED, BookingState.AWAITING_APPROVAL, BookingState.SCHEDULED,
                     BookingState.QUEUED})
HOLDING = HELD_STATES  # every state that is not final holds GPUs and money
# The request that makes a booking starts it at once (`desk.request`); the queue takes a requested booking only once
# this has passed (that request died), so two acquisitions of one booking never race from its first second.
HANDOVER = timedelta(seconds=30)


@dataclass(frozen=True)
class BookingAsk:
    """What a person asked for, already parsed."""

    owner: str
    gpu: str
    count: int
    duration: timedelta
    spot: bool = False
    provider: str | None = None
    region: str | None = None
    max_price: Decimal | None = None
    project: str | None = None
    start_at: datetime | None = None
    note: str | None = None
    channel: str | None = None
    alternatives: tuple[Shape, ...] = ()  # other shapes that would do
    cuda: str | None = None
    image: str | None = None
    replaces: int | None = None
    avoid: str | None = None  # `provider/region`

    def requests(self) -> list[OfferRequest]:
        """The offer request of the first choice, then one per alternative shape."""
        first = OfferRequest(self.gpu, self.count, self.spot, self.provider, self.region, self.max_price, self.cuda)
        return [first, *(replace(first, gpu=shape.gpu, count=shape.count) for shape in self.alternatives)]


@dataclass(frozen=True)
class Booked:
    """The outcome of `book`: the booking, its quote, the budget before and after, and the decision."""

    booking: Booking
    quote: Quote
    budget: list[BudgetLine]
    estimate: Decimal
    decision: str
    duplicate: bool = False
    alternatives: tuple[Quote, ...] = ()  # the quote of each alternative shape, in the order asked

    @property
    def best(self) -> PricedOffer | None:
        """The priced offer acquisition would take now, across the first choice and its alternatives."""
        quotes = [self.quote, *self.alternatives]
        return _likely(quotes) if any(q.best for q in quotes) else None


def book(engine: Engine, ask: BookingAsk, request_key: str | None = None) -> Booked:
    """Quote, check limits and budget, and record a booking ready for acquisition (or approval/scheduling)."""
    if request_key:
        with engine.db.session() as session:
            existing = repo.find_by_request_key(request_key, session=session)
        if existing:
            return Booked(existing, Quote(existing.request(), existing.duration, [], {}), [], Decimal(0), "ok",
                          duplicate=True)
    cuda = ask.cuda or engine.policy.booking.default_cuda
    quotes = [quote(engine, replace(request, cuda=cuda), ask.duration) for request in ask.requests()]
    priced = quotes[0]
    if all(q.best is None for q in quotes):
        raise nothing_sells(engine, priced)
    estimate = _likely(quotes).total
    with engine.db.session() as session:  # decide and hold in one step, under the budget locks
        lines = locked_lines(engine, ask.owner, ask.project, session=session)
        _check_gpu_limit(engine, ask, session)
        decision = over_budget_decision(lines, estimate, engine.policy.budget.over_budget,
                                        engine.is_admin(ask.owner))
        if decision == "block":
            raise OverBudget(estimate, engine.currency, passed_budgets(lines, estimate))
        try:
            new = _new_booking(engine, ask, decision, estimate)
            handed_over = new.requested_at + HANDOVER if new.state == BookingState.REQUESTED else None
            # The quote is kept as facts with the booking: its message is drawn from both at every delivery.
            quoted = requested_notice(new, quotes, _likely(quotes), lines, estimate, decision, engine.currency)
            booking = repo.add_booking(new, session=session, request_key=request_key, next_attempt_at=handed_over,
                                       quoted=to_record(quoted) if engine.shows_progress else None)
            if engine.shows_progress:  # its message, posted from the outbox; a replay has none
                tell(engine, replace(quoted, booking_id=booking.id), session=session)
            if booking.state == BookingState.AWAITING_APPROVAL:  # asked with the booking: a crash loses no ask
                tell_admins(engine, booking, passed_budgets(lines, estimate), session=session)
        except repo.DuplicateRequest:
            existing = repo.find_by_request_key(request_key or "", session=session)
            return Booked(existing, priced, lines, estimate, decision, duplicate=True)
    return Booked(booking, priced, lines, estimate, decision, alternatives=tuple(quotes[1:]))


def _likely(quotes: list[Quote]) -> PricedOffer:
    """The offer acquisition would take now: the cheapest free one of any shape, else the first shape's best."""
    free = [q.best for q in quotes if q.best and q.best.offer.available]
    return min(free, key=lambda o: o.total) if free else next(q.best for q in quotes if q.best)


def _new_booking(engine: Engine, ask: BookingAsk, decision: str, estimate: Decimal) -> Booking:
    now = engine.now()
    state = BookingState.REQUESTED
    if decision == "approve":
        state = BookingState.AWAITING_APPROVAL
    elif ask.start_at and ask.start_at > now:
        state = BookingState.SCHEDULED
    return Booking(id=0, owner=ask.owner, gpu=ask.gpu, count=ask.count, duration=ask.duration, state=state,
                   requested_at=now, project=ask.project, spot=ask.spot, provider_wanted=ask.provider,
                   region_wanted=ask.region, max_price=ask.max_price, start_at=ask.start_at, note=ask.note,
                   channel=ask.channel, alternatives=ask.alternatives, cuda=ask.cuda,
                   image=ask.image, replaces=ask.replaces, avoid=ask.avoid, estimate=estimate)


def _check_gpu_limit(engine: Engine, ask: BookingAsk, session) -> None:
    limit = engine.policy.booking.max_gpus_per_user
    replaced = repo.get_booking(ask.replaces, session=session) if ask.replaces else None
    count = count_gpus(repo.count_gpus_held(ask.owner, HOLDING, session=session),
                       max([ask.count, *(shape.count for shape in ask.alternatives)]), limit, replaced)
    if count.fits or engine.is_admin(ask.owner):
        return
    if replaced is not None:  # a replacement may pass the limit by the hot booking's GPUs, and no more
        raise Refused("Replacing #{booking} would bring its owner to {total} GPUs, past the limit of {limit} per "
                      "person plus the {count} of #{booking} while it is replaced ({allowed}). Release something "
                      "first (`/gpu status` lists the bookings), or `/gpu release {booking}` and book again.",
                      booking=replaced.id, total=count.total, limit=limit, count=count.stretch,
                      allowed=count.allowed)
    raise Refused("You already hold or wait for {held} GPUs; the team limit is {limit} per person. Release "
                  "something first (`/gpu status` lists your bookings).", held=count.held, limit=limit)


def load_for(engine: Engine, booking_id: int, actor: str) -> Booking:
    """The booking, if it exists and `actor` owns it or is an admin."""
    with engine.db.session() as session:
        booking = repo.get_booking(booking_id, session=session)
    if booking is None:
        raise NotFound("There is no booking #{booking}. `/gpu status` lists yours.", booking=booking_id)
    if not engine.may_change(booking.owner, actor):
        raise NotYours("#{booking} belongs to {owner}; only its owner or an admin can change it.", booking=booking_id,
                       owner=booking.owner)
    return booking


def cancel(engine: Engine, booking_id: int, actor: str) -> Booking:
    """Cancel a booking that has no instance yet; one still booting is released (its instance runs and is billed)."""
    booking = load_for(engine, booking_id, actor)
    if booking.state == BookingState.BOOTING:
        return _finish_for(engine, booking, actor, ReleaseWhy.CANCELLED_BOOTING)
    if booking.state in ACTIVE_STATES:
        raise Refused("#{booking} is already running; use `/gpu release {booking}` to stop it.", booking=booking_id)
    if booking.state in FINAL_STATES:
        raise Refused("#{booking} is already {state}.", booking=booking_id, state=booking.state.value)
    with engine.db.session() as session:
        moved = move_booking(engine, booking, WAITING | {BookingState.ACQUIRING}, BookingState.CANCELLED,
                             session=session, released_at=engine.now())
        if moved and engine.shows_progress:  # its message is drawn again, cancelled, from the outbox
            tell(engine, BookingCancelled(to=booking.owner, booking_id=booking.id, gpu=booking.gpu,
                                          count=booking.count, by=None if actor == booking.owner else actor),
                 session=session)
    if not moved:
        raise Refused("#{booking} changed meanwhile; `/gpu status` shows where it is now.", booking=booking_id)
    return booking.with_(state=BookingState.CANCELLED)


def release(engine: Engine, booking_id: int, actor: str) -> Booking:
    """Stop a running booking: terminate its instance, close its billing."""
    booking = load_for(engine, booking_id, actor)
    if booking.state in WAITING | {BookingState.ACQUIRING}:
        return cancel(engine, booking_id, actor)
    if booking.state not in (BookingState.BOOTING, BookingState.ACTIVE):
        raise Refused("#{booking} is {state}; there is nothing to release.", booking=booking_id,
                      state=booking.state.value)
    return _finish_for(engine, booking, actor, ReleaseWhy.RELEASED)


def _finish_for(engine: Engine, booking: Booking, actor: str, why: ReleaseWhy) -> Booking:
    """End the booking on `actor`'s word; the release notice names them when not the owner (the bot words the
    mention)."""
    return finish(engine, booking, why, by=None if actor == booking.owner else actor)


@dataclass(frozen=True)
class Extended:
    """The outcome of `extend`: the booking as it is now, what was added and what it costs (team currency).

    `repeat` when this request (the same click on the same rendered message, the same command) was already
    carried out: nothing changed this time."""

    booking: Booking
    extension: Extension | None
    added_cost: Decimal = Decimal(0)
    over_budget: tuple[Passed, ...] = ()  # the budgets it passed, when `over_budget = "warn"` let it

    @property
    def repeat(self) -> bool:
        """True when nothing was extended because this very request already was."""
        return self.extension is None


def extend(engine: Engine, booking_id: int, actor: str, by: timedelta, request_key: str | None = None) -> Extended:
    """Push a running booking's end out by `by`: `booking.max_duration` bounds the whole booking (admins may pass
    it) and the budget rule applies to the added cost. Decided and written under the budget locks, once per
    `request_key`."""
    owner = load_for(engine, booking_id, actor)
    with engine.db.session() as session:
        lines = locked_lines(engine, owner.owner, owner.project, session=session)
        if request_key and not effects.claim_effect(request_key, engine.now(), session=session):
            return Extended(repo.get_booking(booking_id, session=session), None)
        booking = repo.get_booking(booking_id, session=session)
        if booking.state != BookingState.ACTIVE or booking.ends_at is None or booking.started_at is None:
            raise Refused("#{booking} is {state}; only running bookings can be extended.", booking=booking_id,
                          state=booking.state.value)
        plan = plan_extension(booking.label, booking.started_at, booking.ends_at, by,
                              engine.policy.booking.max_duration, engine.is_admin(actor))
        added = extension_cost(engine, booking, plan)
        warning = extension_budget(engine, booking, lines, added, actor)
        extend_hold(engine, booking, plan.by)
        repo.set_fields(booking_id, session=session, ends_at=plan.new_end,
                        duration_s=int(plan.length.total_seconds()))
        if engine.shows_progress:  # its message is drawn again, with the new length and cost, from the outbox
            tell(engine, BookingExtended(to=booking.owner, booking_id=booking_id, gpu=booking.gpu,
                                         count=booking.count, by=plan.by, ends_at=plan.new_end, length=plan.length,
                                         by_whom=None if actor == booking.owner else actor), session=session)
    return Extended(booking.with_(ends_at=plan.new_end, duration=plan.length), plan, added, warning)


def bookings_of(engine: Engine, owner: str | None, include_finished: int = 5) -> list[Booking]:
    """Open bookings (of one owner, or everyone's), newest first, plus the few latest finished ones."""
    with engine.db.session() as session:
        open_ = repo.list_bookings(session=session, owner=owner, states=HOLDING)
        done = repo.list_bookings(session=session, owner=owner, states=FINAL_STATES)
    return sorted(open_, key=lambda b: -b.id) + sorted(done, key=lambda b: -b.id)[:include_finished]
