"""Pricing: the cost of billed stretches (per second, with tiers), and quotes for a duration."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from functools import lru_cache

from gpubot.domain.money import convert

__all__ = ["Tier", "cost_of_seconds", "interval_cost", "pooled_cost", "quote_total", "seconds_beyond",
           "summed_cost", "tier_thresholds", "use_offset"]

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
    if not tiers and length_s > 0:  # no discount: the sum below in one step (reports price thousands)
        return cost_of_seconds(price_per_gpu_hour, gpus, length_s)
    bounds = sorted({offset_s, offset_s + length_s, *(int(t.after.total_seconds()) for t in tiers
                                                     if offset_s < t.after.total_seconds() < offset_s + length_s)})
    total = Decimal(0)
    for start, end in itertools.pairwise(bounds):
        total += cost_of_seconds(price_per_gpu_hour, gpus, end - start) * _discount_factor(tiers, start)
    return total


def use_offset(started_at: datetime | None, start: datetime) -> int:
    """Whole seconds of continuous use before `start` (0 before the start, or when the start is unknown)."""
    return max(0, int((start - (started_at or start)).total_seconds()))


def tier_thresholds(tiers: Sequence[Tier]) -> list[int]:
    """The distinct thresholds of `tiers` after the start of use, in whole seconds, ascending."""
    return sorted({int(t.after.total_seconds()) for t in tiers} - {0})


def seconds_beyond(offset_s: int, length_s: int, threshold_s: int) -> int:
    """How many seconds of a stretch `offset_s` into continuous use, `length_s` long, lie past `threshold_s`."""
    return max(0, offset_s + length_s - max(offset_s, threshold_s))


def summed_cost(price_per_gpu_hour: Decimal, gpus: int, seconds: int, beyond: Mapping[int, int],
                tiers: Sequence[Tier] = ()) -> Decimal:
    """Cost of stretches of `seconds` in all, `beyond[T]` of which lie past each of `tier_thresholds(tiers)`.

    Equals the sum of `interval_cost` over those stretches (each tier's seconds counted exactly), so stretches
    can be summed in SQL (see `seconds_beyond`) and priced once.
    """
    if not tiers:
        return cost_of_seconds(price_per_gpu_hour, gpus, seconds)
    schedule = _schedule(tuple(tiers))
    past = [seconds, *(beyond[start] for start, _factor in schedule[1:]), 0]
    total = Decimal(0)
    for i, (_start, factor) in enumerate(schedule):
        total += cost_of_seconds(price_per_gpu_hour, gpus, past[i] - past[i + 1]) * factor
    return total


def pooled_cost(price_per_gpu_hour: Decimal, stretches: Iterable[tuple[int, int, int]],
                tiers: Sequence[Tier] = ()) -> Decimal:
    """Cost of (gpus, offset_s, length_s) stretches at one price: their GPU-seconds summed, then priced once.

    Cost is linear in GPU-seconds, so this equals the sum of `interval_cost` of each stretch.
    """
    thresholds = tier_thresholds(tiers)
    gpu_seconds, beyond = 0, dict.fromkeys(thresholds, 0)
    for gpus, offset_s, length_s in stretches:
        gpu_seconds += gpus * length_s
        for threshold in thresholds:
            beyond[threshold] += gpus * seconds_beyond(offset_s, length_s, threshold)
    return summed_cost(price_per_gpu_hour, 1, gpu_seconds, beyond, tiers)


@lru_cache(maxsize=128)
def _schedule(tiers: tuple[Tier, ...]) -> tuple[tuple[int, Decimal], ...]:
    """(start, price factor) of each stretch of continuous use between tier thresholds."""
    return tuple((start, _discount_factor(tiers, start)) for start in (0, *tier_thresholds(tiers)))


def quote_total(price_per_gpu_hour: Decimal, gpus: int, duration: timedelta, currency: str, team_currency: str,
                fx: Mapping[str, Decimal], tiers: Sequence[Tier] = ()) -> Decimal:
    """Estimated cost in team currency of holding `gpus` GPUs for `duration`."""
    native = interval_cost(price_per_gpu_hour, gpus, 0, int(duration.total_seconds()), tiers)
    return convert(native, currency, team_currency, fx)
