"""Ledger reads for costs, budgets and the digest: usage rows, telemetry samples, threshold notices,
failed acquisitions, alerts and provider-cost disagreements."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from db.bookings import to_domain
from db.tables import (
    AcquisitionAttemptRow,
    AlertRow,
    BookingRow,
    BudgetNotificationRow,
    CostCheckRow,
    TelemetrySampleRow,
    UsageIntervalRow,
)
from domain.costing import CostCheck
from domain.model import Booking, BookingState

__all__ = [
    "CostCheck",
    "LedgerRow",
    "UsageGroup",
    "alerts_between",
    "bookings_by_id",
    "claim_budget_notice",
    "cost_checks_between",
    "edge_rows",
    "failed_attempts_between",
    "failed_bookings_between",
    "ledger_count",
    "ledger_rows",
    "notices_of",
    "record_cost_check",
    "samples_for",
    "usage_groups",
]


@dataclass(frozen=True)
class LedgerRow:
    """One usage interval as stored, with everything an export needs."""

    id: int
    booking_id: int
    instance_name: str
    owner: str
    project: str | None
    provider: str
    gpu: str
    count: int
    start: datetime
    end: datetime
    price_per_gpu_hour: Decimal
    currency: str
    spot: bool
    note: str | None


def _overlapping(query, since: datetime | None, until: datetime | None, session: Session):
    t = UsageIntervalRow.__table__.c
    if since is not None:
        # `end > since` alone would scan every later stretch; no stretch is longer than the longest one, so its
        # start is bounded below too, and the start index narrows the scan to the window.
        longest = session.execute(select(func.max(t.seconds))).scalar() or 0
        query = query.where(t.end > since, t.start >= since - timedelta(seconds=longest + 1))
    if until is not None:
        query = query.where(t.start < until)
    return query


def ledger_rows(*, session: Session, since: datetime | None = None, until: datetime | None = None,
                after_id: int | None = None) -> list[LedgerRow]:
    """Usage intervals overlapping [since, until) (all when unbounded), in time order; only those with an id
    above `after_id` when given (the ledger is append-only, so these are the ones added since)."""
    # Plain columns, not ORM objects: building mapped instances was most of the cost of every report
    # (see bench/p3_ledger.py).
    query = _overlapping(_row_select(), since, until, session)
    if after_id is not None:
        query = query.where(UsageIntervalRow.__table__.c.id > after_id)
    return _rows(session.execute(query))


@dataclass(frozen=True)
class UsageGroup:
    """Usage intervals of one booking at one price, summed: seconds and how many rows, up to which id."""

    booking_id: int
    owner: str
    project: str | None
    provider: str
    gpu: str
    count: int
    price_per_gpu_hour: Decimal
    currency: str
    seconds: int
    rows: int
    last_id: int


def usage_groups(*, session: Session, since: datetime, until: datetime, exclude: Iterable[str] = ()
                 ) -> list[UsageGroup]:
    """Intervals lying wholly inside [since, until), summed per booking and price in SQL (exact: the stored
    whole seconds), leaving out the providers in `exclude` (those priced interval by interval)."""
    t = UsageIntervalRow.__table__.c
    keys = (t.booking_id, t.owner, t.project, t.provider, t.gpu, t.count, t.price_per_gpu_hour, t.currency)
    query = (select(*keys, func.sum(t.seconds), func.count(), func.max(t.id))
             .where(t.start >= since, t.end <= until).group_by(*keys))
    if exclude:
        query = query.where(t.provider.not_in(sorted(exclude)))
    return [UsageGroup(*r[:6], Decimal(r[6]), r[7], int(r[8]), int(r[9]), int(r[10]))
            for r in session.execute(query)]


def edge_rows(*, session: Session, since: datetime, until: datetime, include: Iterable[str] = ()
              ) -> list[LedgerRow]:
    """Intervals overlapping [since, until) that `usage_groups` leaves out: those crossing a bound, and every
    interval of the providers in `include`."""
    t = UsageIntervalRow.__table__.c
    crossing = (t.start < since) | (t.end > until)
    wanted = crossing | t.provider.in_(sorted(include)) if include else crossing
    return _rows(session.execute(_overlapping(_row_select(), since, until, session).where(wanted)))


def _row_select():
    t = UsageIntervalRow.__table__.c
    return select(t.id, t.booking_id, t.instance_name, t.owner, t.project, t.provider, t.gpu, t.count, t.start,
                  t.end, t.price_per_gpu_hour, t.currency, t.spot, t.note).order_by(t.start, t.id)


def _rows(query) -> list[LedgerRow]:
    return [LedgerRow(*r[:10], Decimal(r[10]), *r[11:]) for r in query]


def ledger_count(*, session: Session, since: datetime, until: datetime, up_to_id: int) -> int:
    """How many usage intervals overlapping [since, until) have an id of at most `up_to_id`."""
    query = _overlapping(select(func.count()).select_from(UsageIntervalRow), since, until, session)
    return int(session.exec(query.where(col(UsageIntervalRow.id) <= up_to_id)).one())


def bookings_by_id(ids: Iterable[int], *, session: Session) -> dict[int, Booking]:
    """The bookings with these ids."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = session.exec(select(BookingRow).where(col(BookingRow.id).in_(wanted)))
    return {row.id: to_domain(row) for row in rows}


def samples_for(booking_ids: Iterable[int], since: datetime, until: datetime, *, session: Session
                ) -> dict[int, list[tuple[int, float, datetime]]]:
    """Telemetry readings (gpu index, util %, at) per booking in [since, until)."""
    wanted = sorted(set(booking_ids))
    found: dict[int, list[tuple[int, float, datetime]]] = defaultdict(list)
    if not wanted:
        return found
    rows = session.exec(select(TelemetrySampleRow).where(col(TelemetrySampleRow.booking_id).in_(wanted),
                                                         col(TelemetrySampleRow.at) >= since,
                                                         col(TelemetrySampleRow.at) < until))
    for row in rows:
        found[row.booking_id].append((row.gpu_index, row.util, row.at))
    return found


def claim_budget_notice(scope: str, period: str, threshold: int, now: datetime, *, session: Session) -> bool:
    """Record that `threshold` of `scope` was announced in `period`; True for the first claimant only."""
    try:
        with session.begin_nested():
            session.add(BudgetNotificationRow(scope=scope, period=period, threshold=threshold, fired_at=now))
    except IntegrityError:
        return False
    return True


def notices_of(period: str, *, session: Session) -> dict[str, list[int]]:
    """Thresholds already announced in `period`, by scope."""
    found: dict[str, list[int]] = defaultdict(list)
    rows = session.exec(select(BudgetNotificationRow).where(BudgetNotificationRow.period == period)
                        .order_by(col(BudgetNotificationRow.threshold)))
    for row in rows:
        found[row.scope].append(row.threshold)
    return dict(found)


def failed_bookings_between(since: datetime, until: datetime, *, session: Session) -> list[Booking]:
    """Bookings that failed in [since, until)."""
    rows = session.exec(select(BookingRow).where(BookingRow.state == BookingState.FAILED.value,
                                                 col(BookingRow.released_at) >= since,
                                                 col(BookingRow.released_at) < until).order_by(col(BookingRow.id)))
    return [to_domain(row) for row in rows]


def failed_attempts_between(since: datetime, until: datetime, *, session: Session) -> dict[str, int]:
    """Launch attempts that did not launch in [since, until), counted by `provider outcome`."""
    rows = session.exec(select(AcquisitionAttemptRow).where(AcquisitionAttemptRow.outcome != "launched",
                                                            col(AcquisitionAttemptRow.at) >= since,
                                                            col(AcquisitionAttemptRow.at) < until))
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        counts[f"{row.provider} {row.outcome}"] += 1
    return dict(counts)


def alerts_between(since: datetime, until: datetime, *, session: Session) -> list[tuple[str, str, str]]:
    """(kind, severity, summary) of alerts raised in [since, until), oldest first."""
    rows = session.exec(select(AlertRow).where(col(AlertRow.created_at) >= since, col(AlertRow.created_at) < until)
                        .order_by(col(AlertRow.created_at)))
    return [(row.kind, row.severity, row.summary) for row in rows]


def record_cost_check(check: CostCheck, *, session: Session) -> bool:
    """Store the latest disagreement for a booking; True when it is the booking's first."""
    row = session.get(CostCheckRow, check.booking_id)
    first = row is None
    row = row or CostCheckRow(booking_id=check.booking_id, provider=check.provider, basis=check.basis,
                              ours=check.ours, theirs=check.theirs, currency=check.currency,
                              diff_percent=check.diff_percent, checked_at=check.checked_at)
    row.basis, row.ours, row.theirs, row.diff_percent = check.basis, check.ours, check.theirs, check.diff_percent
    row.currency, row.checked_at = check.currency, check.checked_at
    session.add(row)
    return first


def cost_checks_between(since: datetime, until: datetime, *, session: Session) -> list[CostCheck]:
    """Disagreements last seen in [since, until)."""
    rows = session.exec(select(CostCheckRow).where(col(CostCheckRow.checked_at) >= since,
                                                   col(CostCheckRow.checked_at) < until)
                        .order_by(col(CostCheckRow.booking_id)))
    return [CostCheck(r.booking_id, r.provider, r.basis, Decimal(r.ours), Decimal(r.theirs), r.currency,
                      Decimal(r.diff_percent), r.checked_at) for r in rows]
