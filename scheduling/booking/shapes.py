"""Shapes nothing sells: say so at once, naming the largest shape on offer (or, when `--max-price` left every
offer out, the cheapest price there is), instead of queueing for hours.

A cloud sells a GPU type in machines of a few sizes (1, 2, 4, 8 on most; any count up to a host's size on
AutoDL, RunPod and the simulated cloud). When no configured cloud offers the shape asked for, the largest one on
offer is found by probing fewer GPUs: halving down to a size that sells, then searching the gap above it. This
only runs when a request is refused, and each probe goes through the offer cache.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from gpubot.domain.catalog import GPUS
from gpubot.domain.errors import NothingSells
from gpubot.domain.model import OfferRequest
from gpubot.scheduling.booking.quotes import PricedOffer, Quote, quote
from gpubot.scheduling.engine import Engine

__all__ = ["largest_on_offer", "nothing_sells"]


def _sells(engine: Engine, request: OfferRequest, count: int, duration: timedelta) -> bool:
    return bool(quote(engine, replace(request, count=count), duration).offers)


def largest_on_offer(engine: Engine, request: OfferRequest, duration: timedelta) -> int | None:
    """The most GPUs of `request.gpu` (with its filters) that one configured machine sells, below
    `request.count`; None when no count sells."""
    low = high = request.count  # `high`: the smallest size known not to sell
    while low > 1:
        high, low = low, low // 2
        if _sells(engine, request, low, duration):
            break
    else:
        return None
    # `low` sells and `high` does not: search the sizes between for the largest that sells
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _sells(engine, request, middle, duration) else (low, middle)
    return low


def _display(gpu: str) -> str:
    return GPUS[gpu].display if gpu in GPUS else gpu


def _cheapest_over_cap(engine: Engine, priced: Quote) -> PricedOffer | None:
    """When a price cap left every offer out: the cheapest offer without the cap (else None)."""
    if priced.request.max_price is None:
        return None
    uncapped = quote(engine, replace(priced.request, max_price=None), priced.duration).offers
    return min(uncapped, key=lambda offer: offer.price_per_gpu_hour, default=None)


def nothing_sells(engine: Engine, priced: Quote) -> NothingSells:
    """The refusal of a request no configured cloud offers: the cheapest price on offer when only `--max-price`
    stood in the way, else the largest shape that sells, else why none said."""
    request = priced.request
    cheapest = _cheapest_over_cap(engine, priced)
    facts = {"filtered": bool(request.provider or request.region or request.max_price or request.spot),
             "failures": sorted(priced.failures.items())}
    if cheapest is not None:
        return NothingSells(request.gpu, request.count, _display(request.gpu), max_price=request.max_price,
                            cheapest=cheapest.price_per_gpu_hour, currency=engine.currency,
                            cheapest_at=f"{cheapest.offer.provider} {cheapest.offer.region}", **facts)
    largest = largest_on_offer(engine, request, priced.duration) if request.count > 1 else None
    return NothingSells(request.gpu, request.count, _display(request.gpu), largest=largest, **facts)
