"""Watches: `/gpu watch h100x8 2h` books nothing; the owner is told once when 8 H100 can start somewhere, with a
Book now button that books the watched duration (2 h; the team's default length when none was given). How long
the watch itself lives is apart: `within` from now, or `until` a moment, else `booking.watch_for`.

Watches share the availability round of the scheduler: each round probes every distinct shape once, whether
one queued booking, one watch or a hundred of them want it (scheduling.acquisition.queue.refresh_availability).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from gpubot.db import watches as watch_repo
from gpubot.domain.errors import NotFound, NotYours, Refused
from gpubot.domain.model import Offer, OfferRequest
from gpubot.domain.notices import WatchEnded, WatchFired
from gpubot.domain.watches import Watch
from gpubot.scheduling.acquisition.queue import refresh_availability, shape_key
from gpubot.scheduling.booking.booking import Booked, BookingAsk
from gpubot.scheduling.booking.quotes import rank_for
from gpubot.scheduling.delivery import tell
from gpubot.scheduling.desk.request import request
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.probe import ProbeResult

__all__ = ["MAX_WATCHES", "add_watch", "book_watched", "fire_watches", "my_watches", "unwatch", "watch_round",
           "watched_duration"]

MAX_WATCHES = 20  # active watches per person


def add_watch(engine: Engine, owner: str, gpu: str, count: int, provider: str | None, *,
              duration: timedelta | None = None, within: timedelta | None = None,
              until: datetime | None = None, request_key: str | None = None) -> Watch:
    """Watch for `count`× `gpu` that can start for `duration` (default [booking] default_duration), for `within`
    from now or `until` a moment (default [booking] watch_for); once per `request_key` (a second delivery of the
    command gives the watch the first made)."""
    now = engine.now()
    expires_at = until or now + (within or engine.policy.booking.watch_for)
    if expires_at <= now:
        raise Refused("A watch must end in the future.")
    with engine.db.session() as session:
        if request_key and (made := watch_repo.find_by_request_key(request_key, session=session)) is not None:
            return made
        if len(watch_repo.list_watches(session=session, owner=owner, live_at=now)) >= MAX_WATCHES:
            raise Refused("You already have {most} watches; `/gpu unwatch ID` one first (`/gpu watch` lists "
                          "them).", most=MAX_WATCHES)
        return watch_repo.add_watch(owner, gpu, count, provider, now, expires_at,
                                    duration=duration or engine.policy.booking.default_duration, session=session,
                                    request_key=request_key)


def watched_duration(engine: Engine, watch: Watch) -> timedelta:
    """What Book now books: the watch's duration (the team's default for a watch stored without one)."""
    return watch.duration or engine.policy.booking.default_duration


def my_watches(engine: Engine, owner: str) -> list[Watch]:
    """The caller's active watches, oldest first."""
    with engine.db.session() as session:
        return watch_repo.list_watches(session=session, owner=owner, live_at=engine.now())


def _load(engine: Engine, watch_id: int, actor: str) -> Watch:
    with engine.db.session() as session:
        watch = watch_repo.get_watch(watch_id, session=session)
    if watch is None:
        raise NotFound("There is no watch #{watch}. `/gpu watch` lists yours.", watch=watch_id)
    if not engine.may_change(watch.owner, actor):
        raise NotYours("Watch #{watch} belongs to {owner}.", watch=watch_id, owner=watch.owner)
    return watch


def unwatch(engine: Engine, watch_id: int, actor: str) -> Watch:
    """Stop an active watch."""
    watch = _load(engine, watch_id, actor)
    with engine.db.session() as session:
        if not watch_repo.cancel_watch(watch_id, session=session):
            raise Refused("Watch #{watch} is already {state}.", watch=watch_id, state=watch.state)
    return watch


def watch_round(engine: Engine) -> int:
    """The availability job: end expired watches, probe each wanted shape once, fire the watches now free."""
    _expire(engine)
    with engine.db.session() as session:
        active = watch_repo.list_watches(session=session, live_at=engine.now())
    results = refresh_availability(engine, [OfferRequest(w.gpu, w.count) for w in active])
    return fire_watches(engine, active, results)


def fire_watches(engine: Engine, watches: list[Watch], results: dict[tuple, ProbeResult]) -> int:
    """DM each watch whose shape has a free offer (the cheapest), once; returns how many fired."""
    fired = 0
    for watch in watches:
        request = OfferRequest(watch.gpu, watch.count, provider=watch.provider)
        result = results.get(shape_key(request))
        offer = _best(engine, request, result.offers) if result else None
        if offer and _fire(engine, watch, offer):
            fired += 1
    return fired


def _best(engine: Engine, request: OfferRequest, offers: list[Offer]) -> Offer | None:
    ranked = rank_for(engine, offers, request)
    return ranked[0] if ranked else None


def _fire(engine: Engine, watch: Watch, offer: Offer) -> bool:
    with engine.db.session() as session:
        if not watch_repo.fire_watch(watch.id, offer, engine.now(), session=session):
            return False
        tell(engine, WatchFired(to=watch.owner, watch_id=watch.id, gpu=offer.gpu, count=offer.count,
                                provider=offer.provider, region=offer.region, price=engine.offer_price(offer),
                                currency=engine.currency, duration=watched_duration(engine, watch)),
             session=session)
    return True


def _expire(engine: Engine) -> None:
    with engine.db.session() as session:
        for watch in watch_repo.due_to_expire(engine.now(), session=session):
            if watch_repo.set_state(watch.id, "active", "expired", session=session):
                tell(engine, WatchEnded(to=watch.owner, watch_id=watch.id, gpu=watch.gpu, count=watch.count,
                                        watched_for=watch.expires_at - watch.created_at), session=session)


def book_watched(engine: Engine, watch_id: int, actor: str, channel: str | None = None) -> Booked:
    """Book exactly the offer a watch found (provider, region and shape), for the watched duration, and start
    it; once."""
    watch = _load(engine, watch_id, actor)
    if watch.offer is None:
        raise Refused("Watch #{watch} has not found capacity yet.", watch=watch_id)
    offer = watch.offer
    ask = BookingAsk(owner=watch.owner, gpu=offer.gpu, count=offer.count,
                     duration=watched_duration(engine, watch), provider=offer.provider, region=offer.region,
                     channel=channel)
    return request(engine, ask, request_key=f"watch:{watch_id}")
