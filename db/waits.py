"""How long acquisitions took: request time and first launch of each booking of a GPU (for expected waits)."""

from __future__ import annotations

from datetime import datetime

from gpubot.db.core import execute
from gpubot.db.tables.bookings import AcquisitionAttemptRow, BookingRow
from sqlalchemy import bindparam, func
from sqlmodel import Session, select

__all__ = ["acquisition_waits"]


_B, _A = BookingRow.__table__.c, AcquisitionAttemptRow.__table__.c
_WAITS = (select(_B.requested_at, func.min(_A.at))  # read each time a booking is queued
          .select_from(BookingRow.__table__.join(AcquisitionAttemptRow.__table__, _A.booking_id == _B.id))
          # A launch comes after its request, so `at >= since` drops nothing; it lets the index on `at` skip the
          # older attempts instead of scanning them all.
          .where(_A.outcome == "launched", _A.gpu == bindparam("gpu"), _A.at >= bindparam("since"),
                 _B.requested_at >= bindparam("since"))
          .group_by(_B.id, _B.requested_at))


def acquisition_waits(gpu: str, since: datetime, *, session: Session) -> list[tuple[datetime, datetime]]:
    """(requested at, first launched attempt at) of every booking launched on `gpu` requested since `since`."""
    return [(asked, done) for asked, done in execute(session, _WAITS, {"gpu": gpu, "since": since})]
