"""How long acquisitions took (request time and first launch of each booking of a GPU, for expected waits), and how
much of their booked time finished bookings were held (for when running ones are likely to end)."""

from __future__ import annotations

from datetime import datetime, timedelta

from gpubot.db.core import execute
from gpubot.db.tables.bookings import AcquisitionAttemptRow, BookingRow
from gpubot.domain.model import BookingState
from sqlalchemy import bindparam, func
from sqlmodel import Session, select

__all__ = ["acquisition_waits", "held_and_booked"]


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


_HELD = (select(_B.started_at, _B.released_at, _B.duration_s)
         .where(_B.state == BookingState.RELEASED.value, _B.released_at >= bindparam("since"),
                _B.started_at.is_not(None)))


def held_and_booked(since: datetime, *, session: Session) -> list[tuple[timedelta, timedelta]]:
    """(held, booked) of every booking released since `since`: from its start to its release, and its booked length
    (extensions included)."""
    return [(released - started, timedelta(seconds=booked))
            for started, released, booked in execute(session, _HELD, {"since": since})]
