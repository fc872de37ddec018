"""The usage ledger: append closed billed stretches and read one booking's back (db.ledger_window reads them over a
window, one by one or summed in SQL, for costs and budgets)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from gpubot.db.core import execute
from gpubot.db.ledger_window import forget_reach
from gpubot.db.tables.billing import UsageIntervalRow
from gpubot.db.tables.bookings import BookingRow
from gpubot.domain.bill_bounds import BillingMark
from gpubot.domain.model import Booking, BookingState, UsageInterval
from gpubot.domain.pricing import use_offset
from sqlalchemy import Integer, any_, bindparam, func
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlmodel import Session, col, select

__all__ = [
    "BookingStart",
    "among",
    "append_interval",
    "billed_until",
    "billing_marks",
    "booking_starts",
    "intervals_between",
    "list_intervals",
]

_T = UsageIntervalRow.__table__.c


def append_interval(booking: Booking, start: datetime, end: datetime, *, session: Session,
                    note: str | None = None) -> bool:
    """Append the stretch [start, end) for a booking's instance; False if that stretch was already billed."""
    if end <= start or booking.price_per_gpu_hour is None:
        return False
    row = dict(booking_id=booking.id, instance_name=booking.instance_name or f"booking-{booking.id}",
               owner=booking.owner, project=booking.project, provider=booking.provider or "", gpu=booking.gpu,
               count=booking.count, start=start, end=end, seconds=int((end - start).total_seconds()),
               offset_s=use_offset(booking.started_at, start), price_per_gpu_hour=booking.price_per_gpu_hour,
               currency=booking.currency or "USD", spot=booking.spot, note=note)
    forget_reach(session)
    return execute(session, _APPEND[session.get_bind().dialect.name], row).first() is not None


# The same stretch billed twice (a retried release) hits uq_usage_instance_start and inserts nothing
# (ON CONFLICT … RETURNING: PostgreSQL, SQLite ≥ 3.35).
_APPEND = {name: dialect.insert(UsageIntervalRow.__table__).on_conflict_do_nothing(
    index_elements=["instance_name", "start"]).returning(UsageIntervalRow.__table__.c.id)
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))}


_BILLED_UNTIL = select(func.max(_T.end)).where(_T.booking_id == bindparam("booking_id"))  # every release


def billed_until(booking_id: int, *, session: Session) -> datetime | None:
    """The end of the last billed stretch of a booking, or None when nothing is billed yet."""
    return execute(session, _BILLED_UNTIL, {"booking_id": booking_id}).scalar_one()


def billing_marks(booking_ids: Sequence[int], *, session: Session) -> dict[int, BillingMark]:
    """Lock these bookings' rows until the caller's transaction ends and read what bounds each one's next stretch
    (domain.bill_bounds), in one query: a billing pass and a release of the same booking then write one after
    the other, each seeing what the other wrote (on SQLite, BEGIN IMMEDIATE already holds the one write lock)."""
    if not booking_ids:
        return {}
    if len(booking_ids) == 1:  # every release and boot poll: a statement built once
        rows = execute(session, _MARK_OF_ONE, {"booking_id": booking_ids[0]})
    else:
        rows = execute(session, _marks().where(among(_B.id, booking_ids, session)))
    return {row[0]: BillingMark(BookingState(row[1]), row[2], row[3]) for row in rows}


_B = BookingRow.__table__.c


def _marks():
    last_end = select(func.max(_T.end)).where(_T.booking_id == _B.id).scalar_subquery()
    return select(_B.id, _B.state, _B.instance_name, last_end).with_for_update(of=BookingRow.__table__)


_MARK_OF_ONE = _marks().where(_B.id == bindparam("booking_id"))


def _to_domain(row: UsageIntervalRow) -> UsageInterval:
    return UsageInterval(booking_id=row.booking_id, provider=row.provider, gpu=row.gpu, count=row.count,
                         start=row.start, end=row.end, price_per_gpu_hour=Decimal(row.price_per_gpu_hour),
                         currency=row.currency, spot=row.spot, id=row.id)


_INTERVALS_OF = select(_T.booking_id, _T.provider, _T.gpu, _T.count, _T.start, _T.end, _T.price_per_gpu_hour,
                       _T.currency, _T.spot, _T.id).where(_T.booking_id == bindparam("booking_id")).order_by(_T.start)


def list_intervals(booking_id: int, *, session: Session) -> list[UsageInterval]:
    """Every billed stretch of one booking, in time order."""
    rows = execute(session, _INTERVALS_OF, {"booking_id": booking_id})
    return [UsageInterval(*row[:6], Decimal(row[6]), *row[7:]) for row in rows]


def intervals_between(since: datetime, until: datetime, *, session: Session) -> list[tuple[UsageInterval, str,
                                                                                        str | None]]:
    """Stretches overlapping [since, until) with their owner and project."""
    rows = session.exec(select(UsageIntervalRow).where(col(UsageIntervalRow.end) > since,
                                                       col(UsageIntervalRow.start) < until))
    return [(_to_domain(r), r.owner, r.project) for r in rows]


@dataclass(frozen=True)
class BookingStart:
    """What pricing a booking's stretches needs of it: when its continuous use started, and on which instance."""

    started_at: datetime | None
    instance_id: str | None


def booking_starts(ids: Iterable[int], *, session: Session) -> dict[int, BookingStart]:
    """Start and instance of the bookings with these ids (plain columns: reports read hundreds)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    b = BookingRow.__table__.c
    rows = execute(session, select(b.id, b.started_at, b.instance_id).where(among(b.id, wanted, session)))
    return {r[0]: BookingStart(r[1], r[2]) for r in rows}


def among(column, ids: Sequence[int], session: Session):
    """`column IN ids`; on PostgreSQL as one array parameter (`= ANY`): reports ask for thousands of bookings,
    and rendering and parsing one parameter per id cost more than the query."""
    if session.get_bind().dialect.name == "postgresql":
        return column == any_(bindparam(None, list(ids), type_=ARRAY(Integer)))
    return column.in_(ids)
