"""What the clouds offer a queued piece's request right now, which tells the replay when retrying a queued booking
could place it (it retries a queue only then, not every poll)."""

from __future__ import annotations

from decimal import Decimal

from gpubot.domain.model import OfferRequest
from gpubot.scheduling.booking.quotes import fetch_offers, rank_for
from gpubot.scheduling.engine import Engine

__all__ = ["cheapest_free", "has_capacity"]


def _free(engine: Engine, request: OfferRequest) -> list:
    return rank_for(engine, fetch_offers(engine, request, fresh=True).offers, request)


def has_capacity(engine: Engine, request: OfferRequest) -> bool:
    """Whether any offer the request accepts is free now."""
    return bool(_free(engine, request))


def cheapest_free(engine: Engine, request: OfferRequest) -> Decimal | None:
    """The lowest price per hour of the whole shape among the offers free now (None: none is), which a booking
    waiting for a cheaper offer (`[acquire] wait_for_cheaper`) compares with the one it waits for."""
    free = _free(engine, request)
    return min((engine.offer_price(o) * o.count for o in free), default=None)
