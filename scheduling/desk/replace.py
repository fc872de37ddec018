"""Replace an overheating booking: book the same shape elsewhere, then release the hot one when its owner
clicks Release on it or once the new one has run for health.replace_grace — never both billed for longer."""

from __future__ import annotations

from datetime import timedelta

from gpubot.db import alerts as alert_repo
from gpubot.db import bookings as repo
from gpubot.domain.errors import NotFound, NotYours, Refused
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import ReleaseWhy
from gpubot.domain.replacing import replaced_until
from gpubot.scheduling.booking.booking import Booked, BookingAsk
from gpubot.scheduling.delivery import show_replacing
from gpubot.scheduling.desk.request import request
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.health import overheat_prefix
from gpubot.scheduling.money.billing import finish

__all__ = ["MIN_REPLACEMENT", "release_replaced", "replace_booking"]

MIN_REPLACEMENT = timedelta(hours=1)  # a replacement runs at least this long, even near the hot one's end


def _load(engine: Engine, booking_id: int, actor: str) -> Booking:
    with engine.db.session() as session:
        booking = repo.get_booking(booking_id, session=session)
    if booking is None:
        raise NotFound("There is no booking #{booking}.", booking=booking_id)
    if not engine.may_change(booking.owner, actor, oncall_too=True):
        raise NotYours("#{booking} belongs to {owner}; its owner, an admin or on-call can replace it.",
                       booking=booking_id, owner=booking.owner)
    if booking.state != BookingState.ACTIVE:
        raise Refused("#{booking} is {state}; only a running booking can be replaced.", booking=booking_id,
                      state=booking.state.value)
    if not _overheating(engine, booking_id):
        raise Refused("#{booking} has no open overheat alert; only an overheating booking can be replaced. "
                      "`/gpu release {booking}` and a new `/gpu book` move it by hand.", booking=booking_id)
    return booking


def _overheating(engine: Engine, booking_id: int) -> bool:
    """True while an overheat alert of one of the booking's GPUs is open (scheduling.health)."""
    with engine.db.session() as session:
        return bool(alert_repo.open_keys(overheat_prefix(booking_id), session=session))


def replace_booking(engine: Engine, booking_id: int, actor: str) -> Booked:
    """Book the hot booking's shape for its remaining time anywhere but its provider and region (once), for a
    booking with an open overheat alert only; its GPUs may go past the owner's limit by the hot booking's. The hot
    booking's message is redrawn to say by which booking it is being replaced (and, once that one is placed, by
    when it is released)."""
    hot = _load(engine, booking_id, actor)
    remaining = (hot.ends_at - engine.now()) if hot.ends_at else hot.duration
    ask = BookingAsk(owner=hot.owner, gpu=hot.gpu, count=hot.count, duration=max(remaining, MIN_REPLACEMENT),
                     spot=hot.spot, project=hot.project, note=f"replaces #{hot.id}", channel=hot.channel,
                     cuda=hot.cuda, image=hot.image, replaces=hot.id, avoid=f"{hot.provider}/{hot.region}")
    booked = request(engine, ask, request_key=f"replace:{hot.id}")
    if not booked.duplicate and booked.booking.state not in (BookingState.BOOTING, BookingState.ACTIVE):
        show_replacing(engine, hot.id, booked.booking)  # placed at once, its launch owed this (show_progress)
    return booked


def release_replaced(engine: Engine) -> int:
    """Release each booking whose replacement has been active for the grace period; returns how many.

    It releases one scheduler tick early, so that a job running on time never bills the overlap past the grace.
    """
    now = engine.now()
    with engine.db.session() as session:
        active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
    by_id = {b.id: b for b in active}
    released = 0
    for new in active:
        hot = by_id.get(new.replaces or 0)
        until = replaced_until(new, engine.policy.health.replace_grace)  # as `/gpu status` shows it
        if hot and until and now >= until - engine.policy.scheduler.tick:
            finish(engine, hot, ReleaseWhy.REPLACED, replaced_by=new.id)
            released += 1
    return released
