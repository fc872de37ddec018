"""GPU telemetry: pushed batches (checked against their agent token), and pulling from providers and Prometheus."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from gpubot.db import bookings as repo
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.errors import ProviderError
from gpubot.domain.model import FINAL_STATES, Booking, BookingState
from gpubot.domain.ports import GpuReading
from gpubot.domain.telemetry import BOOKING_ENDED, TelemetryRejected, sample_time
from gpubot.scheduling.agent import agent_interval, token_hash
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.effects import once
from gpubot.scheduling.money.billing import instance_of

__all__ = ["pull_telemetry", "pushing_booking", "store_push"]

log = logging.getLogger(__name__)

TelemetrySource = Callable[[Booking], list[GpuReading]]

def pushing_booking(engine: Engine, token: str) -> Booking:
    """The booking an agent token pushes for; TelemetryRejected 401 saying which: the booking ended (the agent
    stops) or the token is unknown (the agent tries again later), or 409 (not active yet)."""
    with engine.db.session() as session:
        booking = telemetry_repo.booking_for_token(token_hash(token), session=session) if token else None
    if booking is None:
        raise TelemetryRejected(401, "unknown agent token", "unknown_token")
    if booking.state in FINAL_STATES or booking.state == BookingState.RELEASING:
        raise TelemetryRejected(401, f"booking {booking.label} ended", BOOKING_ENDED)
    if booking.state != BookingState.ACTIVE:  # the machine booted before the engine saw it ready
        raise TelemetryRejected(409, "the booking is not active yet; keep pushing")
    return booking


def store_push(engine: Engine, booking: Booking, readings: Sequence[GpuReading], batch_id: str | int | None) -> int:
    """Store a batch validated at the edge for `booking`; returns how many readings were stored (0 for a resent
    batch_id)."""
    beyond = sorted({r.index for r in readings if r.index >= booking.count})
    if beyond:  # a token may speak only for the GPUs its booking rents
        raise TelemetryRejected(422, f"GPU index {beyond[0]} is beyond this booking's {booking.count} GPU(s)")
    if batch_id is not None and not once(engine, f"telemetry:{booking.id}:{str(batch_id)[:100]}"):
        return 0
    with engine.db.session() as session:  # one sample per GPU per agent interval: a repeat stores nothing more
        telemetry_repo.add_samples(booking.id, list(readings), sample_time(engine.now(), agent_interval(
            engine.policy)), session=session)
    return len(readings)


def pull_telemetry(engine: Engine, sources: list[TelemetrySource] | None = None) -> int:
    """Ask each active booking's provider (and any extra source, e.g. Prometheus) for readings; store them."""
    with engine.db.session() as session:
        active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
    batches = [(booking.id, readings) for booking in active if (readings := _read(engine, booking, sources or []))]
    if batches:
        now = engine.now()
        with engine.db.session() as session:
            telemetry_repo.add_readings([(booking_id, r, now) for booking_id, readings in batches for r in readings],
                                        session=session)
    return sum(len(readings) for _id, readings in batches)


def _read(engine: Engine, booking: Booking, sources: list[TelemetrySource]) -> list[GpuReading]:
    provider = engine.providers.get(booking.provider or "")
    for source in [lambda b: provider.telemetry(instance_of(b)) if provider else [], *sources]:
        try:
            readings = source(booking)
        except ProviderError as exc:
            log.info("telemetry of #%s unavailable: %s", booking.id, exc)
            continue
        if readings:
            return readings
    return []
