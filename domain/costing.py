"""Costing of the ledger: per-item costs, pool fee shares, idle waste, forecasts and provider-cost checks.

Everything here is pure: the callers read the ledger and the clock and pass plain values in.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

__all__ = [
    "CostCheck",
    "CostItem",
    "GroupTotal",
    "clip",
    "cost_differs",
    "forecast_month",
    "group_items",
    "idle_gpu_seconds",
    "pool_shares",
]

RECONCILE_TOLERANCE = Decimal("0.02")  # a provider's figure more than 2 % away from ours is reported


@dataclass(frozen=True)
class CostItem:
    """What one booking cost in a period: in team currency, and as billed (original amount and currency)."""

    booking_id: int
    owner: str
    project: str | None
    provider: str
    gpu: str
    gpu_seconds: int
    amount: Decimal
    native_amount: Decimal
    currency: str
    kind: str = "usage"  # usage | fee (a share of a team-owned machine's monthly fee)

    def key(self, by: str) -> str:
        """The group this item falls in when grouped `by` user, project, provider, gpu or team."""
        return {"user": self.owner, "project": self.project or "(none)", "provider": self.provider,
                "gpu": self.gpu, "team": "team"}[by]


@dataclass(frozen=True)
class CostCheck:
    """A provider's reported cost that disagreed with ours by more than the tolerance (native currency)."""

    booking_id: int
    provider: str
    basis: str  # total (cost so far) | rate (the instance's cost per hour)
    ours: Decimal
    theirs: Decimal
    currency: str
    diff_percent: Decimal
    checked_at: datetime


@dataclass(frozen=True)
class GroupTotal:
    """One row of a cost report."""

    name: str
    spend: Decimal
    gpu_hours: Decimal
    waste: Decimal
    idle_gpu_hours: Decimal


def clip(start: datetime, end: datetime, since: datetime, until: datetime) -> tuple[datetime, datetime] | None:
    """[start, end) cut to [since, until), or None when they do not overlap."""
    lo, hi = max(start, since), min(end, until)
    return (lo, hi) if hi > lo else None


def pool_shares(monthly_fee: Decimal, month: tuple[datetime, datetime], period: tuple[datetime, datetime],
                gpu_seconds: Mapping[int, int]) -> dict[int, Decimal]:
    """A machine's monthly fee for the part of `period` inside `month`, split by GPU-seconds of its bookings."""
    overlap = clip(*month, *period)
    used = sum(gpu_seconds.values())
    if overlap is None or used <= 0 or monthly_fee <= 0:
        return {}
    month_s = Decimal(int((month[1] - month[0]).total_seconds()))
    fee = monthly_fee * Decimal(int((overlap[1] - overlap[0]).total_seconds())) / month_s
    return {booking: fee * Decimal(seconds) / Decimal(used) for booking, seconds in gpu_seconds.items() if seconds}


def idle_gpu_seconds(samples: Iterable[tuple[int, float | None, datetime]], util_below: float, since: datetime,
                     until: datetime, max_gap: timedelta) -> int:
    """GPU-seconds in [since, until) spent below `util_below` %: each reading holds until the next one of its
    GPU, for at most `max_gap` (missing telemetry is never counted as idleness)."""
    by_gpu: dict[int, list[tuple[datetime, float | None]]] = defaultdict(list)
    for index, util, at in samples:
        by_gpu[index].append((at, util))
    total = 0
    for readings in by_gpu.values():
        readings.sort(key=lambda reading: reading[0])
        ends = [at for at, _ in readings[1:]] + [readings[-1][0] + max_gap]
        for (at, util), nxt in zip(readings, ends, strict=True):
            span = clip(at, min(nxt, at + max_gap), since, until)
            if util is not None and util < util_below and span:  # unknown utilisation (MIG) is never waste
                total += int((span[1] - span[0]).total_seconds())
    return total


def group_items(items: Sequence[CostItem], by: str, waste: Mapping[int, tuple[int, Decimal]]) -> list[GroupTotal]:
    """Cost items summed per group (most expensive first); `waste` is booking → (idle GPU-seconds, amount)."""
    spend: dict[str, Decimal] = defaultdict(Decimal)
    seconds: dict[str, int] = defaultdict(int)
    lost: dict[str, Decimal] = defaultdict(Decimal)
    idle: dict[str, int] = defaultdict(int)
    counted: set[tuple[str, int]] = set()
    for item in items:
        name = item.key(by)
        spend[name] += item.amount
        if item.kind == "usage":
            seconds[name] += item.gpu_seconds
        if item.booking_id in waste and (name, item.booking_id) not in counted:
            counted.add((name, item.booking_id))
            idle[name] += waste[item.booking_id][0]
            lost[name] += waste[item.booking_id][1]
    rows = [GroupTotal(name, spend[name], Decimal(seconds[name]) / 3600, lost[name], Decimal(idle[name]) / 3600)
            for name in spend]
    return sorted(rows, key=lambda r: (-r.spend, r.name))


def forecast_month(spent_to_date: Decimal, month: tuple[datetime, datetime], now: datetime,
                   committed: Decimal = Decimal(0)) -> Decimal:
    """Month-end spend if it goes on at the rate so far (linear in time), and never less than what is spent and
    already committed (the rest of running and waiting bookings): a month whose first booking has just started
    is not forecast at $0."""
    elapsed = (min(now, month[1]) - month[0]).total_seconds()
    if elapsed <= 0:
        return spent_to_date + committed
    linear = spent_to_date * Decimal(int((month[1] - month[0]).total_seconds())) / Decimal(int(elapsed))
    return max(linear, spent_to_date + committed)


def cost_differs(ours: Decimal, theirs: Decimal, tolerance: Decimal = RECONCILE_TOLERANCE) -> Decimal | None:
    """The difference of `theirs` relative to `ours` when it exceeds `tolerance` (1 when ours is 0), else None."""
    if ours == 0:
        return Decimal(1) if theirs != 0 else None
    diff = abs(theirs - ours) / abs(ours)
    return diff if diff > tolerance else None
