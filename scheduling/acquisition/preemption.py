"""Preemption: a provider took back a running booking's machine (a spot interruption).

That is not a fault and not "instance lost": the owner took the deal for the lower price. So no on-call alert
(an info log and `gpubot_preemptions_total{provider}`); the booking is billed up to the interruption, its owner
is told what it cost, and per `[spot] on_preempt` the time it had left is booked again ("requeue") or it just
ends ("notify").

The remaining time goes to a *new* booking that resumes the interrupted one (its note says `resumes #12`, its
request key is `resume:12`, and it takes over #12's Slack message), rather than #12 going back to the queue:
#12 keeps its own history (start, ledger stretches, release) and every once-only message keyed by its id
(ready, released, idle, stale) works again for the new machine; the new booking is an ordinary queued booking,
so the queue drains it, give-up counts from its own request, and budgets see it as held like any other. The
interrupted booking's close and the new booking are written in one transaction: a crash leaves both or neither.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.db import bookings as repo
from gpubot.db import ledger
from gpubot.domain.bill_bounds import still_billed
from gpubot.domain.durations import format_duration
from gpubot.domain.errors import ProviderError
from gpubot.domain.model import FINAL_STATES, Booking, BookingState, Instance, parse_instance_tag
from gpubot.domain.notices import BookingInterrupted, ProgressStep, ReleaseWhy, StepKind
from gpubot.domain.pricing import quote_total
from gpubot.domain.spot import PREEMPTED, Aftermath, aftermath, interruption_moment, remaining_after, resumed_note
from gpubot.scheduling.delivery import move_booking, show_progress, tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.metrics import PREEMPTIONS
from gpubot.scheduling.money.billing import bill_until, billed_total, billing_mark, count_spend, finish

__all__ = ["PREEMPTIBLE_STATES", "preempted", "settle_preempted"]

log = logging.getLogger(__name__)

# states whose machine a preemption ends (a spot machine may be taken back while it still boots, too)
PREEMPTIBLE_STATES = frozenset({BookingState.BOOTING, BookingState.ACTIVE})


def settle_preempted(engine: Engine, live: dict[str, Instance]) -> dict[str, int]:
    """Settle every listed instance its provider preempted (name → booking id of those settled); a reconcile
    pass leaves these out of the rest of its work. An orphan or an acquiring booking's instance is not settled
    here: the pass handles it as any other."""
    tags = {name: tag[0] for name, i in live.items() if i.status == PREEMPTED and (tag := parse_instance_tag(name))}
    if not tags:
        return {}
    with engine.db.session() as session:
        bookings = repo.bookings_by_id(tags.values(), session=session)
    settled = {}
    for name, booking_id in tags.items():
        booking = bookings.get(booking_id)
        if booking is not None and booking.instance_name == name and _settle(engine, booking, live[name]):
            settled[name] = booking_id
    return settled


def _settle(engine: Engine, booking: Booking, instance: Instance) -> bool:
    if booking.state in PREEMPTIBLE_STATES:
        preempted(engine, booking, instance)
    elif booking.state == BookingState.RELEASING:  # released while it was being taken back: bill to the stop
        finish(engine, booking, ReleaseWhy.STOPPED, _moment(engine, booking, instance))
    elif booking.state in FINAL_STATES:
        _clean_up(engine, instance)  # settled before, but what the vendor keeps was not deleted yet
    else:
        return False
    return True


def preempted(engine: Engine, booking: Booking, instance: Instance) -> Booking | None:
    """The provider took back `booking`'s machine: bill it to the interruption, close it, book its remaining time
    again (or not, per `[spot] on_preempt`) and tell the owner. Returns the new booking that resumes it, if any.
    The last stretch, the close and the resuming booking are one transaction under the booking's lock: a crash
    leaves all or none, and a billing pass cannot bill past the interruption."""
    with engine.db.session() as session:
        mark = billing_mark(booking, session=session)
        if not still_billed(mark, booking.instance_name):  # the same rule as billing: it still runs that machine
            return None  # released, expired or settled by another pass meanwhile
        moment = interruption_moment(instance.stopped_at, mark.billed_until, booking.started_at, engine.now())
        stretch = bill_until(engine, booking, moment, session=session, mark=mark)
        resumed = _close(engine, booking, moment, session)
    count_spend(engine, booking, stretch)
    PREEMPTIONS.labels(booking.provider or "").inc()
    _clean_up(engine, instance)
    return resumed


def _close(engine: Engine, booking: Booking, moment: datetime, session) -> Booking | None:
    """Close the interrupted booking at `moment`, owe its owner the news and start the booking that resumes it
    (per `[spot] on_preempt`), in the caller's transaction; the resuming booking, if any."""
    remaining = remaining_after(booking.ends_at, moment, booking.duration)
    then = aftermath(engine.policy.spot.on_preempt, remaining, engine.policy.spot.min_remaining)
    closed = booking.with_(state=BookingState.RELEASED, released_at=moment)
    cost = billed_total(engine, booking, session=session)
    move_booking(engine, booking, PREEMPTIBLE_STATES, BookingState.RELEASED, session=session, released_at=moment)
    resumed = _resume(engine, booking, remaining, session) if then == "requeue" else None
    tell(engine, BookingInterrupted(
        to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
        provider=booking.provider or "", spot=booking.spot, ran=moment - (booking.started_at or moment),
        cost=cost, currency=engine.currency, then=then, resumed=resumed.id if resumed else None,
        remaining=remaining), session=session)
    _show(engine, closed, resumed, remaining, then, cost, session)
    log.info("%s: %s took back %s after %s; %s", booking.label, booking.provider, booking.instance_name,
             format_duration(moment - (booking.started_at or moment)), then)
    return resumed


def _moment(engine: Engine, booking: Booking, instance: Instance) -> datetime:
    with engine.db.session() as session:
        billed = ledger.billed_until(booking.id, session=session)
    return interruption_moment(instance.stopped_at, billed, booking.started_at, engine.now())


def _resume(engine: Engine, booking: Booking, remaining: timedelta, session) -> Booking:
    """A queued booking of the same shape for the time that was left, in the same Slack message.

    It holds the rest of the interrupted booking's commitment against budgets (the time left at the price it ran
    at) and keeps its approval: it is the same ask, already decided; the launch re-check still applies."""
    now = engine.now()
    held = quote_total(booking.price_per_gpu_hour or Decimal(0), booking.count, remaining,
                       booking.currency or engine.currency, engine.currency, engine.policy.fx)
    fresh = Booking(id=0, owner=booking.owner, gpu=booking.gpu, count=booking.count, duration=remaining,
                    state=BookingState.QUEUED, requested_at=now, project=booking.project, spot=booking.spot,
                    provider_wanted=booking.provider_wanted, region_wanted=booking.region_wanted,
                    max_price=booking.max_price, note=resumed_note(booking.id, booking.note), channel=booking.channel,
                    message_ts=booking.message_ts, alternatives=booking.alternatives, cuda=booking.cuda,
                    image=booking.image, avoid=booking.avoid, estimate=held, approved_by=booking.approved_by)
    return repo.add_booking(fresh, session=session, request_key=f"resume:{booking.id}", next_attempt_at=now)


def _clean_up(engine: Engine, instance: Instance) -> None:
    """Terminate what the vendor still lists of a preempted machine (so it is not seen again); safe twice."""
    try:
        engine.providers[instance.provider].terminate(instance)
    except (ProviderError, KeyError) as exc:
        log.warning("clean-up of preempted %s failed, the next reconcile pass retries: %s", instance.name, exc)


def _show(engine: Engine, closed: Booking, resumed: Booking | None, remaining: timedelta, then: Aftermath,
          cost: Decimal, session) -> None:
    """The booking message, in the preemption's transaction (so its lines come before any of the resuming
    booking's own progress): the interrupted booking's step, then the resuming one's."""
    ran = (closed.released_at or engine.now()) - (closed.started_at or engine.now())
    show_progress(engine, closed, [ProgressStep(
        StepKind.INTERRUPTED, provider=closed.provider or "", elapsed=ran, cost=cost, currency=engine.currency,
        then=then, other=resumed.id if resumed else None, limit=remaining)], session=session)
    if resumed is not None:
        show_progress(engine, resumed, [ProgressStep(StepKind.RESUMES, provider=closed.provider or "",
                                                     other=closed.id, limit=remaining)], session=session)
