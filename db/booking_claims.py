"""Claims on a booking's scheduled work, by compare-and-set on its due time: a booting booking's next poll and an
active booking's owed ready DM. Of two replicas (a leader hand-over) that both found one due, only the first moves
it and acts."""

from __future__ import annotations

from datetime import datetime

from gpubot.db.bookings import COLUMNS, from_columns
from gpubot.db.core import execute
from gpubot.db.tables.bookings import BookingRow
from gpubot.domain.model import Booking, BookingState
from sqlalchemy import bindparam, update
from sqlmodel import Session, select

__all__ = ["claim_boot_poll", "claim_ready_dm", "owed_ready_dms"]

_BOOKINGS = BookingRow.__table__
_T = _BOOKINGS.c
_CLAIM_POLL = update(_BOOKINGS).where(
    _T.id == bindparam("booking_id"), _T.state == BookingState.BOOTING.value,
    _T.next_attempt_at <= bindparam("now")).values(next_attempt_at=bindparam("next_at"),
                                                   boot_polls=_T.boot_polls + 1)
_CLAIM_DM = update(_BOOKINGS).where(
    _T.id == bindparam("booking_id"), _T.state == BookingState.ACTIVE.value,
    _T.ready_dm_due_at <= bindparam("now")).values(ready_dm_due_at=bindparam("until"))
_OWED_DMS = select(*COLUMNS, _T.ready_dm_due_at).where(
    _T.state == BookingState.ACTIVE.value, _T.ready_dm_due_at <= bindparam("due_by")).order_by(_T.id)


def claim_boot_poll(booking_id: int, now: datetime, next_at: datetime, *, session: Session) -> bool:
    """Take a booting booking's poll that is due at `now`, moving its next poll to `next_at` and counting it;
    True for the one caller that took it."""
    return execute(session, _CLAIM_POLL, {"booking_id": booking_id, "now": now, "next_at": next_at}).rowcount == 1


def claim_ready_dm(booking_id: int, now: datetime, until: datetime, *, session: Session) -> bool:
    """Take an active booking's owed ready DM (due at `now`), owing it again from `until` should this sender die
    before it is sent; True for the one caller that took it."""
    return execute(session, _CLAIM_DM, {"booking_id": booking_id, "now": now, "until": until}).rowcount == 1


def owed_ready_dms(due_by: datetime, *, session: Session) -> list[tuple[Booking, datetime]]:
    """Active bookings whose ready DM is owed and due by `due_by`, with its due time, oldest first."""
    return [(from_columns(row[:-1]), row[-1]) for row in execute(session, _OWED_DMS, {"due_by": due_by})]
