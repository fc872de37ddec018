"""Waiting for cheaper capacity (`[acquire] wait_for_cheaper`, the rule in domain.cheaper): before a round launches
on the best offer free now, it looks for a cheaper one the booking accepts that is taken but expected free within
the wait, from when the team's own bookings holding it are likely to end and which of the bookings queued ahead
would take those GPUs before their own wait ends (domain.cheaper.frees_at); if there is one, the booking stays
queued (its owner told what it waits for, at what price, what it could take now and until when) and tries again at
its next round, at the latest when the wait ends, when it takes the best offer free then."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from gpubot.db import bookings as repo
from gpubot.db import waits as wait_repo
from gpubot.domain.cheaper import (
    Ahead,
    CheaperWait,
    Holders,
    Priced,
    expected_end,
    frees_at,
    held_share,
    likely_end,
    released_by,
    wait_for_cheaper,
)
from gpubot.domain.model import Booking, BookingState, Offer
from gpubot.domain.notices import ProgressStep, StepKind
from gpubot.domain.ranking import matches
from gpubot.scheduling.booking.launch_options import avoided, booking_requests
from gpubot.scheduling.booking.quotes import fetch_offers, rank_for
from gpubot.scheduling.booking.waits import ESTIMATE_TTL, HISTORY_DAYS
from gpubot.scheduling.engine import Engine

__all__ = ["cheaper_step", "cheaper_wait"]


def cheaper_wait(engine: Engine, booking: Booking) -> CheaperWait | None:
    """What `booking` should wait for rather than launch now, or None (the setting is off, its wait is over,
    nothing is free, or no cheaper offer is expected free in time).

    It probes afresh (the round's launches then use these offers, cached): a cached offer could show free GPUs that
    a launch moments ago took, and the round would take a dearer one without waiting."""
    policy, now = engine.policy.acquire, engine.now()
    if policy.wait_for_cheaper is None or now >= booking.requested_at + policy.wait_for_cheaper:
        return None
    requests = booking_requests(engine, booking)
    offers = [o for r in requests for o in fetch_offers(engine, r, fresh=True, for_launch=True).offers]
    avoid = avoided(booking)
    free = rank_for(engine, offers, requests[0], avoid=avoid, alternatives=requests[1:])
    if not free:
        return None
    best = Priced(free[0], engine.offer_price(free[0]))
    cheaper = [p for o in offers if not o.available and (o.provider, o.region) not in avoid
               and any(matches(o, r, engine.offer_price(o)) for r in requests)
               and (p := Priced(o, engine.offer_price(o))).hourly < best.hourly]
    if not cheaper:  # spares reading the ledger
        return None
    holders, queued = _ledger(engine, {p.offer.gpu for p in cheaper})
    ahead = sorted((b for b in queued if (b.requested_at, b.id) < (booking.requested_at, booking.id)),
                   key=lambda b: (b.requested_at, b.id))
    forecast = [replace(p, frees_at=_frees_at(engine, p.offer, holders, ahead)) for p in cheaper]
    return wait_for_cheaper(forecast, best, now, booking.requested_at + policy.wait_for_cheaper)


def _ledger(engine: Engine, gpus: set[str]) -> tuple[Holders, list[Booking]]:
    """The running bookings of `gpus` per place (they hold the GPUs the forecast is about) and the queued ones of
    `gpus` (they take what frees first, oldest first): bookings of other GPU types never change the forecast, so
    they are not read (a busy team queues thousands), and of the holders only what the forecast uses."""
    with engine.db.session() as session:
        holders = wait_repo.holders_of(gpus, session=session)
        queued = repo.list_bookings(states=[BookingState.QUEUED], gpus=gpus, session=session)
    return holders, queued


def _frees_at(engine: Engine, offer: Offer, holders: Holders, ahead: list[Booking]) -> datetime | None:
    """When the team's bookings on the offer's provider, region and GPU have freed enough of its GPUs for the
    bookings queued ahead that would take them and then this one (when each holder is likely to end, or the end of
    an idle reminder's grace under idle reclaim)."""
    now, share = engine.now(), _held_share(engine)
    held = [(expected_end(likely_end(b.started_at, b.duration, b.ends_at, share, now),
                          released_by(engine.policy.idle, b, now)), b.count)
            for b in holders.get((offer.provider, offer.region, offer.gpu), ()) if b.ends_at is not None]
    wait = engine.policy.acquire.wait_for_cheaper
    assert wait is not None  # cheaper_wait only forecasts with the setting on
    return frees_at(now, held, offer.count, [Ahead(b.count, b.requested_at + wait) for b in ahead
                                             if _would_take(engine, b, offer)])


def _held_share(engine: Engine) -> float | None:
    """The usual share of their booked time the team's bookings released in the last `HISTORY_DAYS` were held
    (reused for `ESTIMATE_TTL` within an hour, as the expected wait is: it moves slowly)."""
    now = engine.now()

    def read() -> float | None:
        with engine.db.session() as session:
            return held_share(*wait_repo.median_held_share(now - timedelta(days=HISTORY_DAYS), session=session))

    return engine.remembered(("held_share", now.replace(minute=0, second=0, microsecond=0)),
                             ESTIMATE_TTL.total_seconds(), read, now.timestamp())


def _would_take(engine: Engine, queued: Booking, offer: Offer) -> bool:
    """Whether a queued booking accepts the offer's GPUs (its GPU, provider, region, spot and price limits, in one
    of its shapes), so that it would take them as they free."""
    if (offer.provider, offer.region) in avoided(queued):
        return False
    price = engine.offer_price(offer)
    return any(matches(replace(offer, count=r.count), r, price) for r in booking_requests(engine, queued)
               if r.gpu == offer.gpu)


def cheaper_step(engine: Engine, waiting: CheaperWait) -> ProgressStep:
    """The note a waiting booking's message shows: what it waits for and at what price, what it could take now, and
    until when it waits."""
    wanted, now = waiting.waits_for, waiting.now
    return ProgressStep(StepKind.CHEAPER, provider=wanted.offer.provider, region=wanted.offer.region,
                        cost=wanted.price, currency=engine.currency,
                        elapsed=max(waiting.frees_at - engine.now(), timedelta(0)),
                        at=waiting.until, other_provider=now.offer.provider, other_price=now.price)
