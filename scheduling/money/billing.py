"""A running booking's bill and its end: billing accrual, the total, and release (the one place a booking is
settled, whoever ends it: the owner, expiry, idle reclaim, a lost machine, a failed launch)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.db import bookings as repo
from gpubot.db import ledger
from gpubot.domain.bill_bounds import BillingMark, release_end, still_billed
from gpubot.domain.errors import ProviderError
from gpubot.domain.model import Booking, BookingState, Instance, UsageInterval
from gpubot.domain.notices import BookingReleased, Notice, ReleaseWhy
from gpubot.domain.queued_billing import bill_start
from gpubot.scheduling.delivery import move_booking, tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.metrics import SPEND
from gpubot.scheduling.money.costs import stretch_cost
from sqlmodel import Session

__all__ = ["accrue", "accrue_all", "bill_from", "bill_until", "billed_total", "billing_mark", "count_spend", "finish",
           "instance_of"]

log = logging.getLogger(__name__)


def instance_of(booking: Booking) -> Instance:
    """The instance handle a booking records."""
    return Instance(booking.provider or "", booking.instance_id or "", booking.instance_name or "",
                    booking.region or "", gpu=booking.gpu, count=booking.count)


def accrue(engine: Engine, booking: Booking, until=None) -> bool:
    """Bill a running booking up to `until` (default now) as one closed stretch; False if nothing new."""
    with engine.db.session() as session:
        stretch = bill_until(engine, booking, until or engine.now(), session=session)
    count_spend(engine, booking, stretch)
    return stretch is not None


def accrue_all(engine: Engine, bookings: list[Booking]) -> int:
    """Bill running bookings up to now in one transaction (reconcile bills every one on every pass); how many
    got a new stretch. The list may be stale: one released or moved to another machine since is not billed."""
    with engine.db.session() as session:
        marks = ledger.billing_marks([b.id for b in bookings], session=session)
        now = engine.now()  # under the rows' locks: a release that waited for them closes after this moment
        stretches = [(b, _bill(engine, b, marks.get(b.id), now, session)) for b in bookings]
    for booking, stretch in stretches:
        count_spend(engine, booking, stretch)
    return sum(stretch is not None for _b, stretch in stretches)


def bill_from(booking: Booking, billed_until: datetime | None, bills_while_queued: bool = True) -> datetime | None:
    """Where billing of a booking's current instance goes on: the end of its last billed stretch, but never before
    that instance's start (a booking whose first machine never became ready has that machine's stretch billed,
    and the next machine starts its own at its launch, not where the first one ended). On a provider that bills
    nothing while queued, None until the machine has started running (domain.queued_billing)."""
    start = bill_start(booking.started_at, booking.ready_at, bills_while_queued)
    if start is None:
        return None
    return max(billed_until, start) if billed_until else start


def billing_mark(booking: Booking, *, session: Session) -> BillingMark | None:
    """Lock the booking's row for the caller's transaction and read what bounds its next stretch."""
    return ledger.billing_marks([booking.id], session=session).get(booking.id)


def bill_until(engine: Engine, booking: Booking, until: datetime, *, session: Session,
               mark: BillingMark | None = None) -> UsageInterval | None:
    """Bill a booking's current instance up to `until` in the caller's transaction, as the ledger holds the
    booking now (`mark`, when the caller has locked it already); the new stretch, if any (pass it to
    `count_spend` once committed)."""
    return _bill(engine, booking, mark or billing_mark(booking, session=session), until, session)


def _bill(engine: Engine, booking: Booking, mark: BillingMark | None, until: datetime, session: Session,
          releasing: bool = False) -> UsageInterval | None:
    """Append the stretch from where the booking's billing stands to `until`; None if nothing new, nothing to
    start from, or the machine `booking` names is not the caller's to bill any more (domain.bill_bounds)."""
    if not still_billed(mark, booking.instance_name, releasing=releasing):
        return None
    start = bill_from(booking, mark.billed_until, engine.bills_while_queued(booking.provider or ""))
    if not start or not ledger.append_interval(booking, start, until, session=session):
        return None
    return UsageInterval(booking.id, booking.provider or "", booking.gpu, booking.count, start, until,
                         booking.price_per_gpu_hour or Decimal(0), booking.currency or engine.currency)


def count_spend(engine: Engine, booking: Booking, stretch: UsageInterval | None) -> None:
    """Count a committed stretch in the spend metric."""
    if stretch is not None:
        SPEND.labels(engine.currency).inc(float(stretch_cost(engine, stretch, booking.started_at)))


def billed_total(engine: Engine, booking: Booking, *, session: Session | None = None) -> Decimal:
    """What a booking has cost so far, from the ledger, in team currency (in the caller's transaction, if given)."""
    if session is not None:
        return _total(engine, booking, ledger.list_intervals(booking.id, session=session))
    with engine.db.session() as own:
        return _total(engine, booking, ledger.list_intervals(booking.id, session=own))


def _total(engine: Engine, booking: Booking, intervals: list[UsageInterval]) -> Decimal:
    return sum((stretch_cost(engine, i, booking.started_at) for i in intervals), Decimal(0))


def finish(engine: Engine, booking: Booking, why: ReleaseWhy, stopped_at: datetime | None = None,
           also: tuple[Notice, ...] = (), by: str | None = None, **facts: object) -> Booking:
    """Terminate a running booking's instance, bill it to the end, and tell the owner what it cost.

    `stopped_at` is when the instance is known to have stopped already (a release interrupted after the
    provider ended it): billing ends there rather than now. A release starts by recording its time in
    `released_at`, which is that moment for an interrupted release. The release notice (naming `by`, who ended
    it when not its owner, and the `facts` its `why` names), and the notices in `also`, are owed in the
    transaction that closes the booking.
    """
    # Marked in flight for the whole release: the expiry job retries a release left RELEASING, and must not take
    # over (and tell the owner "retry" instead of why) one that this process is still carrying out.
    with engine.memory.releasing.working_on(booking.id):
        return _release(engine, booking, stopped_at, also, {"why": why, "by": by, **facts})


def _release(engine: Engine, booking: Booking, stopped_at: datetime | None, also: tuple[Notice, ...],
             told: dict) -> Booking:
    with engine.db.session() as session:
        moved = repo.transition(booking.id, [BookingState.BOOTING, BookingState.ACTIVE], BookingState.RELEASING,
                                session=session, released_at=engine.now(), next_attempt_at=None)
    if not moved and booking.state != BookingState.RELEASING:
        return booking
    try:
        engine.providers[booking.provider or ""].terminate(instance_of(booking))
    except (ProviderError, KeyError) as exc:
        log.warning("terminate of #%s failed, will retry: %s", booking.id, exc)
        return booking.with_(state=BookingState.RELEASING)
    return _close(engine, booking, stopped_at, also, told)


def _close(engine: Engine, booking: Booking, stopped_at: datetime | None, also: tuple[Notice, ...],
           told: dict) -> Booking:
    # The last stretch, the state change and its notices commit together: a crash leaves all or none. The moment
    # is read under the booking's lock, so no billing pass that wrote before it billed past it, and none after
    # bills at all (the booking is released).
    with engine.db.session() as session:
        mark = billing_mark(booking, session=session)
        end = release_end(mark, stopped_at, engine.now())
        done = booking.with_(state=BookingState.RELEASED, released_at=end)
        stretch = _bill(engine, booking, mark, end, session, releasing=True)
        closed = move_booking(engine, booking, [BookingState.RELEASING], BookingState.RELEASED, session=session,
                              released_at=end)
        if closed:
            intervals = ledger.list_intervals(booking.id, session=session)
            for notice in (_released(engine, done, intervals, told), *also):
                tell(engine, notice, session=session)
        else:  # another close won (a second replica, a reconcile pass): the booking is as it left it
            done = repo.get_booking(booking.id, session=session) or done
    count_spend(engine, booking, stretch)
    return done


def _released(engine: Engine, done: Booking, intervals: list[UsageInterval], told: dict) -> BookingReleased:
    # What it ran is what was billed: from its start, or nothing for a job that never left its provider's queue.
    start = bill_start(done.started_at, done.ready_at, engine.bills_while_queued(done.provider or ""))
    return BookingReleased(to=done.owner, booking_id=done.id, gpu=done.gpu, count=done.count, **told,
                           ran=max((done.released_at or engine.now()) - (start or done.released_at or engine.now()),
                                   timedelta(0)),
                           cost=_total(engine, done, intervals), currency=engine.currency)
