"""What a budget scope has committed: the one definition the quote, `/gpu budget`, the threshold check,
approvals and the block rule all read.

    committed(scope) = accrued this month (the ledger)
                     + the live cost of every placed booking: its unbilled stretch, from its last accrual to now
                     + the remaining estimate of every held booking it covers

A booking is *held* in every state that is not final. A placed one (it has a price, a start and an end) is priced
at its own price with its provider's tiers, up to its end — an extension moves the end, a release in progress
stops it at the release. One not placed yet (requested, awaiting approval, scheduled, queued, acquiring, booting
before its start is known) counts the estimate held for it: the quote when it was booked, then the offer tried
when it is launched.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import NamedTuple

from gpubot.domain.budget import BudgetLine
from gpubot.domain.model import FINAL_STATES, BookingState
from gpubot.domain.pricing import Tier, cost_of_seconds, pooled_cost, use_offset

__all__ = ["HELD_STATES", "Held", "HeldCost", "HeldSeconds", "OwnerProject", "headroom", "lock_keys", "price_held",
           "scope_covers", "scope_lines"]

OwnerProject = tuple[str, str | None]

HELD_STATES = frozenset(state for state in BookingState if state not in FINAL_STATES)  # every state not final


class Held(NamedTuple):
    """A booking in a non-final state, with just what pricing the rest of it needs. A named tuple, not a frozen
    dataclass: every budget check builds one per held booking (~70 at a time on the Philly replay), and a frozen
    dataclass's `__init__` cost five times a tuple's."""

    id: int
    owner: str
    project: str | None
    count: int
    estimate: Decimal | None  # team currency, held while it is not placed
    provider: str | None = None
    gpu: str = ""
    price_per_gpu_hour: Decimal | None = None
    currency: str | None = None
    started_at: datetime | None = None
    ends_at: datetime | None = None
    released_at: datetime | None = None  # a release in progress: billing stops here
    billed_until: datetime | None = None  # the end of its last accrued stretch

    @property
    def placed(self) -> bool:
        """True once it runs at a known price: then its own price counts, not the estimate."""
        return self.price_per_gpu_hour is not None and self.started_at is not None and self.ends_at is not None


class HeldSeconds(NamedTuple):
    """Placed bookings of one (owner, project) at one untiered price, summed by the ledger: the GPU-seconds of
    their live stretches and of the rest (`_seconds` of each, times its GPUs). Untiered, only these sums count."""

    owner: str
    project: str | None
    provider: str
    price_per_gpu_hour: Decimal
    currency: str | None
    live_gpu_seconds: int
    rest_gpu_seconds: int


@dataclass(frozen=True)
class HeldCost:
    """What the held bookings of one (owner, project) add to a scope: live (unbilled so far) and remaining."""

    live: Decimal = Decimal(0)
    remaining: Decimal = Decimal(0)

    def plus(self, other: HeldCost) -> HeldCost:
        """The sum of two."""
        return HeldCost(self.live + other.live, self.remaining + other.remaining)


def _stretches(held: Held, now: datetime, since: datetime | None
               ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(gpus, offset, seconds) of the live stretch [billed_until, now) (from `since` at the earliest) and of the
    rest [now, end): a booking bills until it is released, even past its end; a release in progress ends the rest."""
    assert held.started_at is not None and held.ends_at is not None
    billed = max(held.billed_until or held.started_at, held.started_at, since or held.started_at)
    end = held.released_at or held.ends_at
    # Whole seconds from the start, so the two stretches add up to the booking exactly: truncating each length on
    # its own lost up to a second per split (a 1 h booking's spent + committed read 59m59s).
    billed_s, live_end_s = use_offset(held.started_at, billed), use_offset(held.started_at, max(billed, now))
    live = (held.count, billed_s, live_end_s - billed_s)
    rest = (held.count, live_end_s, max(0, use_offset(held.started_at, end) - live_end_s))
    return live, rest


def _seconds(held: Held, now: datetime, since: datetime | None) -> tuple[int, int]:
    """The lengths of `_stretches`' two stretches (live, rest), in seconds: all an untiered price needs."""
    started = held.started_at
    billed = max(held.billed_until or started, started, since or started)
    end = held.released_at or held.ends_at
    billed_s = int((billed - started).total_seconds())  # billed >= started: use_offset without its max(0, …)
    live_end_s = int((max(billed, now) - started).total_seconds())
    return live_end_s - billed_s, max(0, max(0, int((end - started).total_seconds())) - live_end_s)


def price_held(held: Iterable[Held], now: datetime, tiers_of: Callable[[str], Sequence[Tier]],
               to_team: Callable[[Decimal, str], Decimal], since: datetime | None = None,
               summed: Iterable[HeldSeconds] = ()) -> dict[OwnerProject, HeldCost]:
    """Live cost (since `since`, the period's start) and remaining estimate of held bookings, per (owner,
    project), in team currency; `summed`: placed bookings at untiered prices whose seconds the ledger added up
    (the same sums `held` would give for them).

    Placed bookings are grouped per provider price and priced once (`pooled_cost`): a budget check reads every
    held booking."""
    groups: dict[tuple, list] = {}  # per price: [live, rest] GPU-seconds, or [lives, rests] stretches when tiered
    totals: dict[OwnerProject, HeldCost] = defaultdict(HeldCost)
    tiers_by_provider: dict[str, Sequence[Tier]] = {}
    for sums in summed:
        if tiers_by_provider.setdefault(sums.provider, tiers_of(sums.provider)):
            raise ValueError(f"seconds of {sums.provider} summed, but its price is tiered: each stretch counts")
        group = groups.setdefault((sums.owner, sums.project, sums.provider, sums.price_per_gpu_hour,
                                   sums.currency or ""), [0, 0])
        group[0] += sums.live_gpu_seconds
        group[1] += sums.rest_gpu_seconds
    for booking in held:
        key = (booking.owner, booking.project)
        if booking.placed:
            provider = booking.provider or ""
            tiers = tiers_by_provider.get(provider)
            if tiers is None:
                tiers = tiers_by_provider[provider] = tiers_of(provider)
            group = (*key, provider, booking.price_per_gpu_hour, booking.currency or "")
            if tiers:
                lives, rests = groups.setdefault(group, [[], []])
                live, rest = _stretches(booking, now, since)
                lives.append(live)
                rests.append(rest)
            else:  # untiered: only the GPU-seconds count (what pooled_cost sums), added up without the tuples
                live_s, rest_s = _seconds(booking, now, since)
                sums = groups.setdefault(group, [0, 0])
                sums[0] += booking.count * live_s
                sums[1] += booking.count * rest_s
        elif booking.estimate:
            totals[key] = totals[key].plus(HeldCost(remaining=booking.estimate))
    # In the groups' order, whatever order the rows came in: Decimal sums round at their 28th digit, so the same
    # bookings read in another order (the ledger's sums, a database's grouping) could differ there
    for (owner, project, provider, price, currency), (lives, rests) in sorted(groups.items(), key=_group_order):
        tiers = tiers_by_provider[provider]
        if tiers:
            live_cost, rest_cost = pooled_cost(price, lives, tiers), pooled_cost(price, rests, tiers)
        else:  # pooled_cost of untiered stretches is the cost of their summed GPU-seconds
            live_cost, rest_cost = cost_of_seconds(price, 1, lives), cost_of_seconds(price, 1, rests)
        cost = HeldCost(to_team(live_cost, currency), to_team(rest_cost, currency))
        totals[owner, project] = totals[owner, project].plus(cost)
    return dict(totals)


def _group_order(item: tuple[tuple, list]) -> tuple:
    owner, project, provider, price, currency = item[0]
    return owner, project or "", provider, price, currency


def scope_covers(scope: str, owner: str, project: str | None) -> bool:
    """Whether a booking by `owner` in `project` counts against `scope` (`team`, `user:U1`, `project:p`)."""
    kind, _, name = scope.partition(":")
    if kind == "team":
        return True
    return name == owner if kind == "user" else name == (project or "(none)")


def scope_lines(scopes: Iterable[tuple[str, Decimal, Decimal]], held: dict[OwnerProject, HeldCost]
                ) -> list[BudgetLine]:
    """A BudgetLine per (scope, limit, accrued): spent = accrued + live, committed = the remaining estimates."""
    lines = []
    for scope, limit, accrued in scopes:
        cost = HeldCost()
        for (owner, project), amount in held.items():
            if scope_covers(scope, owner, project):
                cost = cost.plus(amount)
        lines.append(BudgetLine(scope, limit, accrued + cost.live, cost.remaining))
    return lines


def headroom(lines: Iterable[BudgetLine]) -> Decimal | None:
    """How much more may be committed before the tightest budget is passed; None when no budget limits it."""
    rooms = [line.limit - line.projected for line in lines if line.limit > 0]
    return min(rooms) if rooms else None


def lock_keys(owner: str, project: str | None) -> list[str]:
    """The budget scopes a booking by `owner` in `project` touches, in the one order every lock takes them."""
    return sorted({"team", f"user:{owner}", f"project:{project or '(none)'}"})
