"""The ledger priced: every usage interval of a period as a cost item, pool machines' monthly fees split over
the bookings that used them, and idle waste from telemetry. Every figure the bot shows is summed from here."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from itertools import pairwise

from gpubot.db import bookings as booking_repo
from gpubot.db import ledger, ledger_window
from gpubot.db import reports as reports_db
from gpubot.db.ledger import BookingStart
from gpubot.db.ledger_window import LedgerRow
from gpubot.domain.budget import month_bounds
from gpubot.domain.costing import CostItem, clip, idle_gpu_seconds, pool_shares
from gpubot.domain.policy_sections import ProviderPolicy
from gpubot.domain.pricing import Tier, interval_cost, summed_cost, tier_thresholds, use_offset
from gpubot.providers.registry import kind_named
from gpubot.scheduling.engine import Engine
from sqlmodel import Session

__all__ = ["SpendTotals", "cost_items", "monthly_fees", "months_between", "priced_rows", "spend_per_period",
           "spend_totals", "waste_by_booking"]

_HOUR = Decimal(3600)
_PERIODS_KEPT = 8  # priced periods remembered per engine (budgets ask for the same month again and again)


@dataclass
class _Priced:
    """A period's usage priced so far. The ledger is append-only (closed stretches, never edited), so a
    period's items only grow: later calls price just the stretches added since (`last_id`)."""

    row_count: int
    pool_rows: list[LedgerRow]
    bookings: dict[int, BookingStart]
    usage: list[CostItem]
    pool: list[CostItem] | None = None
    last_id: int = 0
    usage_totals: SpendTotals | None = None  # `usage` summed, kept up to date as rows are added
    pool_totals: SpendTotals | None = None
    totals: SpendTotals | None = None  # the two merged: asked for again by every budget check until a row is added


@dataclass(frozen=True)
class SpendTotals:
    """A period's spend (team currency) for the whole team, per user and per project (`(none)` for none)."""

    team: Decimal = Decimal(0)
    users: dict[str, Decimal] = field(default_factory=dict)
    projects: dict[str, Decimal] = field(default_factory=dict)

    def plus(self, items: Sequence[CostItem]) -> SpendTotals:
        """These totals with `items` added (a new object: totals handed out earlier never change)."""
        team, users, projects = self.team, dict(self.users), dict(self.projects)
        for item in items:
            team += item.amount
            users[item.owner] = users.get(item.owner, Decimal(0)) + item.amount
            project = item.project or "(none)"
            projects[project] = projects.get(project, Decimal(0)) + item.amount
        return SpendTotals(team, users, projects)

    def merged(self, other: SpendTotals) -> SpendTotals:
        """The sum of two totals."""
        return SpendTotals(self.team + other.team, _added(self.users, other.users),
                           _added(self.projects, other.projects))


def _added(first: dict[str, Decimal], second: dict[str, Decimal]) -> dict[str, Decimal]:
    return {key: first.get(key, Decimal(0)) + second.get(key, Decimal(0)) for key in first.keys() | second.keys()}


def spend_totals(engine: Engine, since: datetime, until: datetime, *, session: Session) -> SpendTotals:
    """`cost_items` of [since, until) summed per team, user and project. Every booking checks its budget, so the
    sums are kept with the priced period and only the stretches added since the last call are added."""
    priced = _priced(engine, since, until, session)
    if priced.totals is None:  # a pricing not summed yet: every one with new rows is a new `_Priced`
        if priced.pool is None:
            priced.pool = _pool_items(engine, priced.pool_rows, priced.bookings, since, until)
        if priced.usage_totals is None:
            priced.usage_totals = SpendTotals().plus(priced.usage)
        if priced.pool_totals is None:
            priced.pool_totals = SpendTotals().plus(priced.pool)
        priced.totals = priced.usage_totals.merged(priced.pool_totals) if priced.pool else priced.usage_totals
    return priced.totals


def cost_items(engine: Engine, since: datetime, until: datetime, *, session: Session) -> list[CostItem]:
    """What every booking cost in [since, until): usage at its snapshot price with tiers, plus pool shares."""
    priced = _priced(engine, since, until, session)
    if priced.pool is None:
        priced.pool = _pool_items(engine, priced.pool_rows, priced.bookings, since, until)
    return priced.usage + priced.pool


def _priced(engine: Engine, since: datetime, until: datetime, session: Session) -> _Priced:
    """The period's priced usage, reusing an earlier pricing when no stretch below its last id has appeared
    since (a concurrent writer may commit a lower id late: then everything is priced again)."""
    periods: dict[tuple[datetime, datetime], _Priced] = engine.memory.priced_periods
    known = periods.pop((since, until), None)
    added = ledger_window.rows_added(session=session, since=since, until=until,
                                     after_id=known.last_id) if known else None
    if known and added.settled in (None, known.row_count):  # None: no id can appear late (db.ledger_window.rows_added)
        priced = _add(engine, known, added.rows, since, until, session)
    else:
        cold = _cold(engine, (since, until), session)
        priced = _Priced(cold.row_count, cold.pool_rows, cold.bookings, cold.buckets[0], None, cold.last_id)
    periods[(since, until)] = priced
    while len(periods) > _PERIODS_KEPT:
        periods.pop(next(iter(periods)))
    return priced


def spend_per_period(engine: Engine, bounds: Sequence[datetime], *, session: Session) -> list[Decimal]:
    """Team-currency spend in each period [bounds[i], bounds[i + 1]) — the total of `cost_items` of each — in one
    pass over the ledger (uncached); the bulk is summed per period and price, not per booking."""
    cold = _cold(engine, bounds, session, per_booking=False)
    return [sum((i.amount for i in usage + _pool_items(engine, cold.pool_rows, cold.bookings, lo, hi)), Decimal(0))
            for usage, (lo, hi) in zip(cold.buckets, pairwise(bounds), strict=True)]


@dataclass
class _Cold:
    """Periods priced from scratch: usage items per period, the pool rows and bookings read on the way."""

    buckets: list[list[CostItem]]
    pool_rows: list[LedgerRow]
    bookings: dict[int, BookingStart]
    row_count: int
    last_id: int


def _cold(engine: Engine, bounds: Sequence[datetime], session: Session, per_booking: bool = True) -> _Cold:
    """The bulk summed in SQL (tiers too, from stored offsets); the rest (crossing a bound, unknown offset, pool)
    priced one by one. Not `per_booking`, the bulk's items are per price (no booking: only their amounts count)."""
    pools = _pools(engine)
    tiers = {name: engine.tiers(name) for name in engine.policy.providers}
    thresholds = sorted({t for listed in tiers.values() for t in tier_thresholds(listed)})
    groups = ledger_window.usage_groups(session=session, bounds=bounds, exclude=pools, thresholds=thresholds,
                                 per_booking=per_booking)
    edges = ledger_window.edge_rows(session=session, bounds=bounds, include=pools)
    bookings = ledger.booking_starts({r.booking_id for r in edges}, session=session)
    buckets: list[list[CostItem]] = [[] for _ in bounds[1:]]
    for group in groups:
        buckets[group.bucket].append(_group_item(engine, group, tiers.get(group.provider, [])))
    for row in edges:
        for i in _buckets_of(row, bounds):
            if item := _usage_item(engine, row, bookings.get(row.booking_id), bounds[i], bounds[i + 1],
                                   tiers.get(row.provider)):
                buckets[i].append(item)
    return _Cold(buckets, [r for r in edges if r.provider in pools], bookings,
                 sum(g.rows for g in groups) + len(edges),
                 max([g.last_id for g in groups] + [r.id for r in edges], default=0))


def _buckets_of(row: LedgerRow, bounds: Sequence[datetime]) -> range:
    """Indexes of the periods between `bounds` that a row overlaps."""
    return range(max(bisect_right(bounds, row.start) - 1, 0), min(bisect_left(bounds, row.end), len(bounds) - 1))


def _pools(engine: Engine) -> set[str]:
    """The providers whose machines cost a monthly fee (the team's own: kinds with `monthly_fees`)."""
    return {name for name, config in engine.policy.providers.items() if monthly_fees(config) is not None}


def monthly_fees(config: ProviderPolicy) -> list[tuple[str, Decimal]] | None:
    """(host, monthly fee) of each machine of a team-owned provider; None for any other."""
    kind = kind_named(config.kind)
    return kind.monthly_fees(config) if kind and kind.monthly_fees else None


def _group_item(engine: Engine, group: ledger_window.UsageGroup, tiers: list[Tier]) -> CostItem:
    native = summed_cost(group.price_per_gpu_hour, group.count, group.seconds, group.beyond, tiers)
    return CostItem(group.booking_id, group.owner, group.project, group.provider, group.gpu,
                    group.seconds * group.count, engine.to_team(native, group.currency), native, group.currency)


def _add(engine: Engine, known: _Priced, rows: list[LedgerRow], since: datetime, until: datetime,
         session: Session) -> _Priced:
    if not rows:
        return known
    bookings = {**known.bookings, **ledger.booking_starts({r.booking_id for r in rows}, session=session)}
    items = [i for r in rows if (i := _usage_item(engine, r, bookings.get(r.booking_id), since, until))]
    pools = _pools(engine)
    pool_rows = [r for r in rows if r.provider in pools]
    totals = known.usage_totals.plus(items) if known.usage_totals is not None else None
    return _Priced(known.row_count + len(rows), known.pool_rows + pool_rows, bookings, known.usage + items,
                   None if pool_rows else known.pool, max(known.last_id, *(r.id for r in rows)), totals,
                   None if pool_rows else known.pool_totals)


def _usage_item(engine: Engine, row: LedgerRow, booking: BookingStart | None, since: datetime, until: datetime,
                tiers: list[Tier] | None = None) -> CostItem | None:
    """A stretch's cost clipped to [since, until) (None when it lies outside), with its provider's `tiers` (read
    from the engine when not given)."""
    span = clip(row.start, row.end, since, until)
    if span is None:
        return None
    offset = use_offset((booking.started_at if booking else None) or row.start, span[0])
    seconds = int((span[1] - span[0]).total_seconds())
    native = interval_cost(row.price_per_gpu_hour, row.count, offset, seconds,
                           engine.tiers(row.provider) if tiers is None else tiers)
    return CostItem(row.booking_id, row.owner, row.project, row.provider, row.gpu, seconds * row.count,
                    engine.to_team(native, row.currency), native, row.currency)


def priced_rows(engine: Engine, *, session: Session, since: datetime | None = None,
                until: datetime | None = None) -> list[tuple[LedgerRow, CostItem]]:
    """Every usage interval (overlapping the bounds when given) with its whole cost, for exports."""
    rows = ledger_window.ledger_rows(session=session, since=since, until=until)
    bookings = ledger.booking_starts({r.booking_id for r in rows}, session=session)
    priced = [(r, _usage_item(engine, r, bookings.get(r.booking_id), r.start, r.end)) for r in rows]
    return [(r, item) for r, item in priced if item is not None]


def months_between(engine: Engine, since: datetime, until: datetime) -> list[tuple[datetime, datetime]]:
    """The calendar months (team time zone) that [since, until) touches, as UTC bounds."""
    months, cursor = [], since
    while cursor < until:
        start, end, _label = month_bounds(cursor, engine.team_tz)
        months.append((start, end))
        cursor = end
    return months


def _pool_items(engine: Engine, rows: list[LedgerRow], bookings: dict[int, BookingStart], since: datetime,
                until: datetime) -> list[CostItem]:
    items: list[CostItem] = []
    for name, config in engine.policy.providers.items():
        for host, fee in monthly_fees(config) or []:
            mine = [r for r in rows if r.provider == name and _host(bookings.get(r.booking_id)) == host]
            for month in months_between(engine, since, until):
                items += _machine_month(engine, mine, fee, config.currency, month, since, until)
    return items


def _machine_month(engine: Engine, rows: list[LedgerRow], fee: Decimal, currency: str,
                   month: tuple[datetime, datetime], since: datetime, until: datetime) -> list[CostItem]:
    period = clip(since, until, *month)
    if period is None:
        return []
    used: dict[int, int] = defaultdict(int)
    first: dict[int, LedgerRow] = {}
    for row in rows:
        span = clip(row.start, row.end, *period)
        if span:
            used[row.booking_id] += int((span[1] - span[0]).total_seconds()) * row.count
            first.setdefault(row.booking_id, row)
    shares = pool_shares(fee, month, period, used)
    return [CostItem(b, first[b].owner, first[b].project, first[b].provider, first[b].gpu, used[b],
                     engine.to_team(share, currency), share, currency, kind="fee") for b, share in shares.items()]


def _host(booking: BookingStart | None) -> str:
    return (booking.instance_id or "").split("/", 1)[0] if booking else ""


def waste_by_booking(engine: Engine, items: list[CostItem], since: datetime, until: datetime, *,
                     session: Session) -> dict[int, tuple[int, Decimal]]:
    """Idle GPU-seconds and what they cost (team currency, snapshot price) per booking in [since, until)."""
    gap = engine.policy.health.telemetry_stale_after
    ids = {i.booking_id for i in items if i.kind == "usage"}
    samples = reports_db.samples_for(ids, since - gap, until, session=session)
    bookings = booking_repo.bookings_by_id(samples, session=session)
    waste = {}
    for booking_id, readings in samples.items():
        booking = bookings[booking_id]
        held_from = max(since, booking.started_at or since)
        idle = idle_gpu_seconds(readings, engine.policy.idle.util_below, held_from,
                                min(until, booking.released_at or until), gap)
        if idle and booking.price_per_gpu_hour is not None:
            rate = engine.to_team(booking.price_per_gpu_hour, booking.currency or engine.currency)
            waste[booking_id] = (idle, rate * idle / _HOUR)
    return waste
