"""How long acquisitions took: request time and first launch of each booking of a GPU (for expected waits)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func
from sqlmodel import Session, select

from db.tables import AcquisitionAttemptRow, BookingRow

__all__ = ["acquisition_waits"]


def acquisition_waits(gpu: str, since: datetime, *, session: Session) -> list[tuple[datetime, datetime]]:
    """(requested at, first launched attempt at) of every booking launched on `gpu` requested since `since`."""
    launched = func.min(AcquisitionAttemptRow.at)
    query = (select(BookingRow.requested_at, launched)
             .join(AcquisitionAttemptRow, AcquisitionAttemptRow.booking_id == BookingRow.id)
             .where(AcquisitionAttemptRow.outcome == "launched", AcquisitionAttemptRow.gpu == gpu,
                    BookingRow.requested_at >= since)
             .group_by(BookingRow.id, BookingRow.requested_at))
    return [(asked, done) for asked, done in session.exec(query)]
