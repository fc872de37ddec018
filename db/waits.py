"""How long acquisitions took (request time and first launch of each booking of a GPU, for expected waits), how
much of their booked time finished bookings were held (for when running ones are likely to end), and who holds a
GPU type now (for when its GPUs free): what the expected wait and the cheaper-offer forecast read."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache

from gpubot.db.core import execute, in_slots, slot_params, slots_for
from gpubot.db.seconds import SecondsBetween
from gpubot.db.tables.bookings import AcquisitionAttemptRow, BookingRow
from gpubot.domain.cheaper import Holder, Holders
from gpubot.domain.model import ACTIVE_STATES, BookingState
from sqlalchemy import bindparam, case, func, literal
from sqlmodel import Session, select

__all__ = ["acquisition_waits", "holders_of", "median_held_share"]


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


_RELEASED_SINCE = (_B.state == BookingState.RELEASED.value, _B.released_at >= bindparam("since"),
                   _B.started_at.is_not(None))


_RATIO = SecondsBetween(_B.released_at, _B.started_at) / _B.duration_s
_SHARE = case((_RATIO > 1, literal(1.0)), else_=_RATIO)  # at most 1, as domain.cheaper.held_share says
_BOOKED_SINCE = (*_RELEASED_SINCE, _B.duration_s > 0)
_SHARES = select(func.count()).where(*_BOOKED_SINCE).scalar_subquery()
# The median as domain.cheaper.held_share takes it (of an even count, the upper middle), sorted by the database:
# a busy team releases thousands of bookings in the window, and the forecast asks again every hour.
_MEDIAN = select(_SHARE, _SHARES).where(*_BOOKED_SINCE).order_by(_SHARE).limit(1).offset(_SHARES // 2)


def median_held_share(since: datetime, *, session: Session) -> tuple[float | None, int]:
    """The median share of its booked time a booking released since `since` was held (at most 1; the upper middle
    of an even count), and how many such bookings there are; (None, 0) when there are none."""
    row = execute(session, _MEDIAN, {"since": since}).first()
    return (float(row[0]), row[1]) if row else (None, 0)


@lru_cache(maxsize=8)
def _holders(gpu_slots: int):
    """The holders' statement for up to `gpu_slots` GPU types (db.core.slots_for)."""
    return (select(*[_B[name] for name in Holder._fields if name != "duration"], _B.duration_s)
            .where(in_slots(_B.state, "states", len(ACTIVE_STATES)), in_slots(_B.gpu, "gpus", gpu_slots))
            .order_by(_B.id))


def holders_of(gpus: set[str], *, session: Session) -> Holders:
    """The running bookings (booting, active, releasing) of `gpus`, per (provider, region, GPU) they hold, oldest
    first: only the columns the cheaper-offer forecast reads (it reads them each time a booking could wait)."""
    slots = slots_for(len(gpus))
    params = slot_params("states", sorted(s.value for s in ACTIVE_STATES), len(ACTIVE_STATES)) \
        | slot_params("gpus", sorted(gpus), slots)
    held: Holders = {}
    for row in execute(session, _holders(slots), params):
        provider, region, gpu, count, started_at, ends_at, reminded, kept, rule, snoozed, seconds = row
        held.setdefault((provider, region, gpu), []).append(
            Holder(provider, region, gpu, count, started_at, timedelta(seconds=seconds), ends_at, reminded, kept,
                   rule, snoozed))
    return held
