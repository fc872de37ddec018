"""The usage ledger: append closed billed stretches, read totals for costs and budgets."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from db.tables import UsageIntervalRow
from domain.model import Booking, UsageInterval

__all__ = ["append_interval", "billed_until", "intervals_between", "list_intervals"]


def append_interval(booking: Booking, start: datetime, end: datetime, *, session: Session,
                    note: str | None = None) -> bool:
    """Append the stretch [start, end) for a booking's instance; False if that stretch was already billed."""
    if end <= start or booking.price_per_gpu_hour is None:
        return False
    row = UsageIntervalRow(booking_id=booking.id, instance_name=booking.instance_name or f"booking-{booking.id}",
                           owner=booking.owner, project=booking.project, provider=booking.provider or "",
                           gpu=booking.gpu, count=booking.count, start=start, end=end,
                           seconds=int((end - start).total_seconds()),
                           price_per_gpu_hour=booking.price_per_gpu_hour, currency=booking.currency or "USD",
                           spot=booking.spot, note=note)
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        return False
    return True


def billed_until(booking_id: int, *, session: Session) -> datetime | None:
    """The end of the last billed stretch of a booking, or None when nothing is billed yet."""
    return session.exec(select(func.max(UsageIntervalRow.end)).where(
        UsageIntervalRow.booking_id == booking_id)).one()


def _to_domain(row: UsageIntervalRow) -> UsageInterval:
    return UsageInterval(booking_id=row.booking_id, provider=row.provider, gpu=row.gpu, count=row.count,
                         start=row.start, end=row.end, price_per_gpu_hour=Decimal(row.price_per_gpu_hour),
                         currency=row.currency, spot=row.spot, id=row.id)


def list_intervals(booking_id: int, *, session: Session) -> list[UsageInterval]:
    """Every billed stretch of one booking, in time order."""
    rows = session.exec(select(UsageIntervalRow).where(UsageIntervalRow.booking_id == booking_id)
                        .order_by(col(UsageIntervalRow.start)))
    return [_to_domain(r) for r in rows]


def intervals_between(since: datetime, until: datetime, *, session: Session) -> list[tuple[UsageInterval, str,
                                                                                        str | None]]:
    """Stretches overlapping [since, until) with their owner and project."""
    rows = session.exec(select(UsageIntervalRow).where(col(UsageIntervalRow.end) > since,
                                                       col(UsageIntervalRow.start) < until))
    return [(_to_domain(r), r.owner, r.project) for r in rows]
