"""The waiting line: start scheduled bookings when due, retry queued ones when their backoff has passed."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from gpubot.db import bookings as repo
from gpubot.domain.model import Booking, BookingState, OfferRequest
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.launch_options import booking_requests
from gpubot.scheduling.booking.quotes import fetch_offers
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.probe import ProbeResult

__all__ = ["QueueEntry", "drain", "queue_view", "refresh_availability", "shape_key", "start_now"]


@dataclass(frozen=True)
class QueueEntry:
    """A waiting booking, its place in line and how long it has waited."""

    position: int
    booking: Booking
    waited: timedelta


def start_now(engine: Engine, booking: Booking, decided: Decimal | None = None) -> Booking:
    """Acquire a freshly requested booking at once (`decided`: what its request just held against budgets)."""
    return acquire(engine, booking.id, decided)


def drain(engine: Engine, limit: int = 50) -> int:
    """Start due scheduled bookings and retry due queued ones (oldest first); returns how many were tried."""
    now = engine.now()
    with engine.db.session() as session:
        for booking in repo.list_bookings(session=session, states=[BookingState.SCHEDULED]):
            if booking.start_at and booking.start_at <= now:
                repo.transition(booking.id, [BookingState.SCHEDULED], BookingState.REQUESTED, session=session)
        due = repo.list_bookings(session=session, states=[BookingState.QUEUED, BookingState.REQUESTED],
                                 due_before=now, limit=limit)
    for booking in due:
        acquire(engine, booking.id)
    return len(due)


def queue_view(engine: Engine) -> list[QueueEntry]:
    """Everyone's waiting bookings in the order they will be tried."""
    now = engine.now()
    with engine.db.session() as session:
        waiting = repo.list_bookings(session=session, states=[BookingState.QUEUED, BookingState.REQUESTED,
                                                             BookingState.ACQUIRING,
                                                             BookingState.AWAITING_APPROVAL,
                                                             BookingState.SCHEDULED])
    return [QueueEntry(i + 1, b, now - b.requested_at) for i, b in enumerate(waiting)]


def refresh_availability(engine: Engine, also: Iterable[OfferRequest] = ()) -> dict[tuple, ProbeResult]:
    """Probe the shapes people wait for (every alternative too) and `also` (watches), ONCE per distinct shape,
    so availability metrics and the offer cache stay fresh; returns each shape's result by shape_key."""
    with engine.db.session() as session:  # bookings of one shape want the same probes: one of each is enough
        waiting = repo.first_of_each_shape([BookingState.QUEUED], session=session)
    wanted = [*(r for b in waiting for r in booking_requests(engine, b)), *also]
    # Filters (provider, region, price) apply when offers are ranked; the probe asks for the bare shape.
    shapes = {shape_key(r): OfferRequest(r.gpu, r.count, r.spot, cuda=r.cuda) for r in wanted}
    return {key: fetch_offers(engine, request, fresh=True) for key, request in shapes.items()}


def shape_key(request: OfferRequest) -> tuple:
    """What makes two requests one probe: GPU, count, spot and CUDA floor."""
    return (request.gpu, request.count, request.spot, request.cuda)
