"""Pricing: the cost of billed stretches (per second, with tiers), and quotes for a duration."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from domain.money import convert

__all__ = ["Tier", "cost_of_seconds", "interval_cost", "quote_total"]

_HOUR = Decimal(3600)


@dataclass(frozen=True)
class Tier:
    """`percent` off the part of continuous use beyond `after`."""

    after: timedelta
    percent: Decimal


def _discount_factor(tiers: Sequence[Tier], elapsed_s: int) -> Decimal:
    best = max((t.percent for t in tiers if elapsed_s >= t.after.total_seconds()), default=Decimal(0))
    return (Decimal(100) - best) / Decimal(100)


def cost_of_seconds(price_per_gpu_hour: Decimal, gpus: int, seconds: int | Decimal) -> Decimal:
    """Undiscounted cost of `gpus` GPUs for `seconds` at a per-GPU-hour price."""
    return price_per_gpu_hour * gpus * Decimal(seconds) / _HOUR


def interval_cost(price_per_gpu_hour: Decimal, gpus: int, offset_s: int, length_s: int,
                  tiers: Sequence[Tier] = ()) -> Decimal:
    """Cost of a stretch that starts `offset_s` into continuous use and lasts `length_s` seconds.

    Each tier applies exactly to the seconds beyond its threshold, so the cost is additive over splits.
    """
    bounds = sorted({offset_s, offset_s + length_s, *(int(t.after.total_seconds()) for t in tiers
                                                     if offset_s < t.after.total_seconds() < offset_s + length_s)})
    total = Decimal(0)
    for start, end in itertools.pairwise(bounds):
        total += cost_of_seconds(price_per_gpu_hour, gpus, end - start) * _discount_factor(tiers, start)
    return total


def quote_total(price_per_gpu_hour: Decimal, gpus: int, duration: timedelta, currency: str, team_currency: str,
                fx: Mapping[str, Decimal], tiers: Sequence[Tier] = ()) -> Decimal:
    """Estimated cost in team currency of holding `gpus` GPUs for `duration`."""
    native = interval_cost(price_per_gpu_hour, gpus, 0, int(duration.total_seconds()), tiers)
    return convert(native, currency, team_currency, fx)
