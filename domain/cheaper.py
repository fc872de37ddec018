"""Waiting for cheaper capacity (`[acquire] wait_for_cheaper`): whether a booking should let the best offer free
now go and wait in the queue for a cheaper one that is taken now but is expected to free in time.

The expected moment comes from the team's own bookings that hold the cheaper offer's GPUs (when they are likely to
end: the share of its booked time the team's finished bookings were usually held, while that is still ahead, else
the booked end; sooner for one whose idle reminder's grace ends first under idle reclaim) and the bookings queued
ahead of this one that would take those GPUs: in queue order, each takes what frees first if that is before its own
wait ends, else it takes what is free elsewhere then and leaves them. Past the wait the booking takes the best
offer free then.

Pure: offers, prices and times in, a decision out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import NamedTuple

from gpubot.domain.model import Booking, Offer
from gpubot.domain.policy_sections import IdlePolicy
from gpubot.domain.telemetry import grace_of

__all__ = ["SHARE_HISTORY_MIN", "Ahead", "CheaperWait", "Holder", "Holders", "Priced", "expected_end", "frees_at",
           "held_share", "likely_end", "released_by", "wait_for_cheaper"]

SHARE_HISTORY_MIN = 20  # finished bookings needed before their usual held share moves a forecast


@dataclass(frozen=True)
class Priced:
    """An offer, its price per GPU-hour in the team currency, and when its GPUs are expected to be free (None:
    not expected within anything we know; an available offer is free now)."""

    offer: Offer
    price: Decimal
    frees_at: datetime | None = None

    @property
    def hourly(self) -> Decimal:
        """Per hour of the whole shape (alternatives differ in GPU count)."""
        return self.price * self.offer.count


class Holder(NamedTuple):
    """A running booking as the forecast sees it: where it runs, how many GPUs it holds, its slot, and its idle
    reminder (the fields of `Booking` it needs, read without the rest: a forecast reads every holder of a type)."""

    provider: str | None
    region: str | None
    gpu: str
    count: int
    started_at: datetime | None
    duration: timedelta
    ends_at: datetime | None
    idle_reminded_at: datetime | None = None
    idle_kept_since: datetime | None = None
    idle_rule: str | None = None
    snoozed_until: datetime | None = None


Holders = dict[tuple[str | None, str | None, str], list[Holder]]  # per (provider, region, GPU) they hold


@dataclass(frozen=True)
class Ahead:
    """A booking queued before this one that would take the offer's GPUs: how many it wants, and when its own wait
    for them ends (after that it takes the best offer free elsewhere, and leaves these to the bookings behind it)."""

    gpus: int
    until: datetime


@dataclass(frozen=True)
class CheaperWait:
    """The booking waits for `waits_for` (expected free at `frees_at`) until `until`, rather than take `now` (the
    best offer free at this moment), which it takes at `until` if the cheaper one has not freed by then."""

    waits_for: Priced
    now: Priced
    frees_at: datetime
    until: datetime


def expected_end(ends_at: datetime, released_by: datetime | None) -> datetime:
    """When a holder is expected to free its GPUs: its booked end, or sooner `released_by` (an idle booking whose
    reminder's grace ends then, under `[idle] action = "release"`, nobody having kept or snoozed it)."""
    return min(ends_at, released_by) if released_by is not None else ends_at


def held_share(median: float | None, finished: int, minimum: int = SHARE_HISTORY_MIN) -> float | None:
    """The usual share of its booked time that a finished booking of the team was held: `median`, the median of
    `finished` such shares (each at most 1; of an even count the upper middle: db.waits.median_held_share), or
    None with fewer than `minimum` of them (the booked ends stand then)."""
    return median if finished >= minimum else None


def likely_end(started_at: datetime | None, booked: timedelta, ends_at: datetime, share: float | None,
               now: datetime) -> datetime:
    """When a holder is likely to free its GPUs: `share` of its booked time after its start, while that is still
    ahead; its booked end once that moment has passed (it is one of those that use their slot), or without a
    usual share."""
    if share is None or started_at is None:
        return ends_at
    likely = started_at + booked * share
    return likely if now < likely < ends_at else ends_at


def released_by(idle: IdlePolicy, holder: Holder | Booking, now: datetime) -> datetime | None:
    """When idle reclaim releases a holder reminded of its idle GPUs (at the end of the grace of the rule that
    reminded it), unless its owner kept or snoozed it; None when it is not on that path."""
    if (idle.action != "release" or holder.idle_reminded_at is None or holder.idle_kept_since is not None
            or (holder.snoozed_until is not None and holder.snoozed_until > now)):
        return None
    return holder.idle_reminded_at + grace_of(idle, holder.idle_rule)


def frees_at(now: datetime, held: Iterable[tuple[datetime, int]], wanted: int, ahead: Sequence[Ahead] = ()
             ) -> datetime | None:
    """When enough of the GPUs `held` (each holder's expected end and GPU count) have freed for this booking's
    `wanted`, after the bookings queued `ahead` of it (in queue order) took theirs; None when even all of them are too
    few. One ahead takes the first GPUs to free after those taken before it, unless they free only after its wait
    ends: then it takes another offer at that moment, and they go to those behind it."""
    ends = sorted(held)

    def freed_for(need: int) -> datetime | None:
        freed = 0
        for end, gpus in ends:
            freed += gpus
            if freed >= need:
                return max(end, now)
        return None

    taken = 0
    for booking in ahead:
        at = freed_for(taken + booking.gpus)
        if at is not None and at <= booking.until:
            taken += booking.gpus
    return freed_for(taken + wanted)


def wait_for_cheaper(taken: Iterable[Priced], best_free: Priced | None, now: datetime, until: datetime
                     ) -> CheaperWait | None:
    """The cheapest of the `taken` offers (not free now) that is cheaper per hour than the best one free now and
    is expected free by `until`; None means: take the best free one now (also when nothing is free: the booking
    queues anyway, or when the wait has ended)."""
    if best_free is None or now >= until:
        return None
    fitting = [p for p in taken if p.frees_at is not None and p.frees_at <= until and p.hourly < best_free.hourly]
    if not fitting:
        return None
    chosen = min(fitting, key=lambda p: (p.hourly, p.frees_at, p.offer.provider, p.offer.region))
    assert chosen.frees_at is not None
    return CheaperWait(chosen, best_free, chosen.frees_at, until)
