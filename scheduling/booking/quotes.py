"""Quotes: every provider's offer for a shape, priced for a duration in the team currency."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from decimal import Decimal

from gpubot.db import effects
from gpubot.domain.cuda import cuda_shortfall
from gpubot.domain.model import Offer, OfferRequest
from gpubot.domain.ranking import matches, rank_offers
from gpubot.scheduling import breakers
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.memory import OfferCache
from gpubot.scheduling.metrics import GPUS_AVAILABLE
from gpubot.scheduling.money.costs import offer_total
from gpubot.scheduling.probe import probe_offers

__all__ = ["PAUSED_CACHE", "PricedOffer", "Quote", "eligible_providers", "fetch_offers", "quote", "rank_for"]

PAUSED_CACHE, PAUSED_TTL = "paused_providers", 5.0


@dataclass(frozen=True)
class PricedOffer:
    """An offer with its price per GPU-hour and total for the duration, in team currency."""

    offer: Offer
    price_per_gpu_hour: Decimal
    total: Decimal


@dataclass(frozen=True)
class Quote:
    """All offers for a request (best first), and why some providers gave none."""

    request: OfferRequest
    duration: timedelta
    offers: list[PricedOffer]
    failures: dict[str, str]
    excluded: list[tuple[Offer, str]] = field(default_factory=list)  # offers left out, and why

    @property
    def best(self) -> PricedOffer | None:
        """The offer a booking would try first: the best available one, else the cheapest listed."""
        available = [o for o in self.offers if o.offer.available]
        return (available or self.offers or [None])[0]


def eligible_providers(engine: Engine) -> dict:
    """Configured providers that are enabled and not paused by an admin."""
    paused = _paused(engine)
    return {name: p for name, p in engine.providers.items() if name not in paused}


def _paused(engine: Engine) -> set[str]:
    """The paused providers, read at most every PAUSED_TTL seconds: every quote and launch asks, a pause is
    rare, and this replica's own pauses clear the cache at once (others see one within PAUSED_TTL)."""
    return engine.remembered(PAUSED_CACHE, PAUSED_TTL, lambda: _read_paused(engine))


def _read_paused(engine: Engine) -> set[str]:
    with engine.db.session() as session:
        return effects.paused_providers(session=session)


def _cache(engine: Engine) -> OfferCache:
    if engine.memory.offers is None:
        engine.memory.offers = OfferCache(engine.policy.acquire.offer_cache.total_seconds())
    return engine.memory.offers


def fetch_offers(engine: Engine, request: OfferRequest, fresh: bool = False, for_launch: bool = False):
    """Probe the eligible providers for a request (cached briefly unless `fresh`).

    `for_launch` also skips providers whose circuit breaker is open; quotes still show every provider's prices.
    """
    timeout = engine.policy.acquire.probe_timeout.total_seconds()
    providers = eligible_providers(engine)
    if for_launch:
        providers = breakers.closed_to(engine, providers)
    result = probe_offers(providers, request, timeout, _cache(engine), fresh,
                          observe=lambda name, kind: breakers.record(engine, name, kind),
                          executor=engine.probe_executor)
    for offer in result.offers:
        free_now = offer.available and not offer.queued  # a queued offer's GPUs are busy now
        GPUS_AVAILABLE.labels(offer.provider, offer.gpu).set(offer.count if free_now else 0)
    return replace(result, offers=[_with_max_cuda(engine, o) for o in result.offers])


def _with_max_cuda(engine: Engine, offer: Offer) -> Offer:
    """The offer's own max CUDA, else the one configured for its provider."""
    config = engine.policy.providers.get(offer.provider)
    return offer if offer.max_cuda or not config or not config.max_cuda else replace(offer, max_cuda=config.max_cuda)


def rank_for(engine: Engine, offers: Iterable[Offer], request: OfferRequest, *,
             avoid: frozenset[tuple[str, str]] = frozenset(), alternatives: Sequence[OfferRequest] = ()) -> list[Offer]:
    """`domain.ranking.rank_offers` with the engine's `[acquire]` strategy and order, its providers' kinds, the
    team's own machines and prices in the team currency: the one ranking every use case shares."""
    acquire = engine.policy.acquire
    return rank_offers(offers, request, strategy=acquire.strategy, order=acquire.order, kind_of=engine.kind_of,
                       team_owned=engine.team_owned, price_in_team=engine.offer_price, avoid=avoid,
                       requests=alternatives)


def quote(engine: Engine, request: OfferRequest, duration: timedelta) -> Quote:
    """Every matching offer priced for `duration`, best first (available ones before the rest)."""
    result = fetch_offers(engine, request)
    ranked = rank_for(engine, result.offers, request)
    unavailable = [o for o in result.offers if not o.available and matches(o, request, engine.offer_price(o))]
    unavailable.sort(key=engine.offer_price)
    priced = [_price(engine, o, duration) for o in ranked + unavailable]
    return Quote(request, duration, priced, result.failures, _cuda_excluded(engine, result.offers, request))


def _cuda_excluded(engine: Engine, offers: list[Offer], request: OfferRequest) -> list[tuple[Offer, str]]:
    """Offers that fit the request except for its CUDA floor, with the reason."""
    loose = replace(request, cuda=None)
    return [(o, why) for o in offers if (why := cuda_shortfall(o.max_cuda, request.cuda))
            and matches(o, loose, engine.offer_price(o))]


def _price(engine: Engine, offer: Offer, duration: timedelta) -> PricedOffer:
    return PricedOffer(offer, engine.offer_price(offer), offer_total(engine, offer, duration))
