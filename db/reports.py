"""Reads and records for costs, budgets and the digest: bookings, telemetry samples, threshold notices,
failed acquisitions, alerts and provider-cost disagreements (usage rows are read in db/ledger_window.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import NamedTuple

from gpubot.db.bookings import bookings_where
from gpubot.db.core import execute
from gpubot.db.ledger import among
from gpubot.db.tables.billing import BudgetNotificationRow, CostCheckRow
from gpubot.db.tables.bookings import AcquisitionAttemptRow, BookingRow
from gpubot.db.tables.operations import AlertRow
from gpubot.db.tables.telemetry import TelemetrySampleRow
from gpubot.db.telemetry_rollups import rollup_readings
from gpubot.domain.costing import CostCheck
from gpubot.domain.model import Booking, BookingState
from sqlalchemy import bindparam, func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

__all__ = [
    "CostCheck",
    "Ran",
    "alerts_between",
    "claim_budget_notice",
    "cost_checks_between",
    "failed_attempts_between",
    "failed_bookings_between",
    "notices_of",
    "record_cost_check",
    "samples_for",
]

_B = BookingRow.__table__.c


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
    return bookings_where(_B.state == BookingState.FAILED.value, _B.released_at >= since, _B.released_at < until,
                          session=session)


class Ran(NamedTuple):
    """A booking that ran in a period, as the digest lists it (its state and end now)."""

    id: int
    count: int
    gpu: str
    owner: str
    provider: str | None
    state: str
    ends_at: datetime | None


_RAN_STATES = [s.value for s in (BookingState.BOOTING, BookingState.ACTIVE, BookingState.RELEASING,
                                 BookingState.RELEASED)]
# Built once, and only the columns the digest shows: building Booking objects for every booking of a day was a
# fifth of the digest's time (P3).
_RAN = select(_B.id, _B.count, _B.gpu, _B.owner, _B.provider, _B.state, _B.ends_at).where(
    _B.state.in_(_RAN_STATES), _B.started_at.is_not(None), _B.started_at < bindparam("until"),
    _B.released_at.is_(None) | (_B.released_at > bindparam("since"))).order_by(_B.id)


def bookings_running_between(since: datetime, until: datetime, *, session: Session) -> list[Ran]:
    """Bookings that ran at some time in [since, until): started before its end, not released before its start
    (running now, or released since)."""
    return [Ran(*row) for row in execute(session, _RAN, {"since": since, "until": until})]


def failed_attempts_between(since: datetime, until: datetime, *, session: Session) -> dict[str, int]:
    """Launch attempts that did not launch in [since, until), counted by `provider outcome` (in SQL)."""
    a = AcquisitionAttemptRow.__table__.c
    rows = execute(session, select(a.provider, a.outcome, func.count()).where(
        a.outcome != "launched", a.at >= since, a.at < until).group_by(a.provider, a.outcome))
    return {f"{provider} {outcome}": int(n) for provider, outcome, n in rows}


def alerts_between(since: datetime, until: datetime, *, session: Session) -> list[tuple[str, str, str]]:
    """(kind, severity, summary) of alerts raised in [since, until), oldest first."""
    a = AlertRow.__table__.c
    return [(kind, severity, summary) for kind, severity, summary in execute(session, select(
        a.kind, a.severity, a.summary).where(a.created_at >= since, a.created_at < until).order_by(a.created_at))]


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
    c = CostCheckRow.__table__.c
    rows = execute(session, select(c.booking_id, c.provider, c.basis, c.ours, c.theirs, c.currency, c.diff_percent,
                                   c.checked_at).where(c.checked_at >= since, c.checked_at < until)
                   .order_by(c.booking_id))
    return [CostCheck(r.booking_id, r.provider, r.basis, Decimal(r.ours), Decimal(r.theirs), r.currency,
                      Decimal(r.diff_percent), r.checked_at) for r in rows]
