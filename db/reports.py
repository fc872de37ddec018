"""Reads and records for costs, budgets and the digest: bookings, telemetry samples, threshold notices,
failed acquisitions, alerts and provider-cost disagreements (usage rows are read in db/ledger_window.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal

from gpubot.db.bookings import to_domain
from gpubot.db.core import execute
from gpubot.db.ledger import among
from gpubot.db.tables.billing import BudgetNotificationRow, CostCheckRow
from gpubot.db.tables.bookings import AcquisitionAttemptRow, BookingRow
from gpubot.db.tables.operations import AlertRow
from gpubot.db.tables.telemetry import TelemetrySampleRow
from gpubot.db.telemetry_rollups import rollup_readings
from gpubot.domain.costing import CostCheck
from gpubot.domain.model import Booking, BookingState
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

__all__ = [
    "CostCheck",
    "alerts_between",
    "claim_budget_notice",
    "cost_checks_between",
    "failed_attempts_between",
    "failed_bookings_between",
    "notices_of",
    "record_cost_check",
    "samples_for",
]


def samples_for(booking_ids: Iterable[int], since: datetime, until: datetime, *, session: Session
                ) -> dict[int, list[tuple[int, float | None, datetime]]]:
    """Telemetry readings (gpu index, util %, at) per booking in [since, until): the raw samples, and for intervals
    rolled up (older than the idle and health checks read) each interval's mean at its first and last sample."""
    wanted = sorted(set(booking_ids))
    found: dict[int, list[tuple[int, float | None, datetime]]] = defaultdict(list)
    if not wanted:
        return found
    t = TelemetrySampleRow.__table__.c
    rows = execute(session, select(t.booking_id, t.gpu_index, t.util, t.at).where(
        among(t.booking_id, wanted, session), t.at >= since, t.at < until))
    for booking_id, gpu_index, util, at in rows:
        found[booking_id].append((gpu_index, util, at))
    for booking_id, gpu_index, util, at in rollup_readings(wanted, since, until, session=session):
        found[booking_id].append((gpu_index, util, at))
    for readings in found.values():
        readings.sort(key=lambda reading: reading[2])
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


def bookings_running_between(since: datetime, until: datetime, *, session: Session) -> list[Booking]:
    """Bookings that ran at some time in [since, until): started before its end, not released before its start
    (running now, or released since)."""
    states = [s.value for s in (BookingState.BOOTING, BookingState.ACTIVE, BookingState.RELEASING,
                                BookingState.RELEASED)]
    rows = session.exec(select(BookingRow).where(col(BookingRow.state).in_(states),
                                                 col(BookingRow.started_at).is_not(None),
                                                 col(BookingRow.started_at) < until,
                                                 col(BookingRow.released_at).is_(None)
                                                 | (col(BookingRow.released_at) > since)).order_by(col(BookingRow.id)))
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
