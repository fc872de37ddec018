"""GPU telemetry: agent tokens, pushed batches, and pulling from providers and Prometheus."""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Callable

from sqlmodel import Session

from db import bookings as repo
from db import telemetry as telemetry_repo
from domain.errors import ProviderError
from domain.model import Booking, BookingState
from domain.ports import GpuReading
from domain.telemetry import TelemetryRejected, decode_batch, parse_readings
from scheduling.effects import once
from scheduling.engine import Engine
from scheduling.lifecycle import instance_of

__all__ = ["agent_command", "ingest_push", "issue_agent_token", "pull_telemetry", "token_hash"]

log = logging.getLogger(__name__)

TelemetrySource = Callable[[Booking], list[GpuReading]]


def token_hash(token: str) -> str:
    """How agent tokens are stored: SHA-256, never the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()


def issue_agent_token(booking_id: int, *, session: Session) -> str:
    """A fresh random agent token for a booking (only its hash is kept)."""
    token = secrets.token_urlsafe(24)
    telemetry_repo.set_token_hash(booking_id, token_hash(token), session=session)
    return token


def agent_command(public_url: str, token: str) -> str:
    """The exact command line that runs the telemetry agent on the GPU machine."""
    return f"gpubot agent --url {public_url.rstrip('/')} --token {token}"


def ingest_push(engine: Engine, token: str, body: bytes) -> int:
    """Store a pushed batch for the booking the token belongs to; returns how many readings were stored."""
    with engine.db.session() as session:
        booking = telemetry_repo.booking_for_token(token_hash(token), session=session) if token else None
    if booking is None or booking.state != BookingState.ACTIVE:
        raise TelemetryRejected(401, "unknown or expired agent token")
    payload = decode_batch(body)
    readings = parse_readings(payload)
    batch = payload.get("batch_id") if isinstance(payload, dict) else None
    if batch is not None and not once(engine, f"telemetry:{booking.id}:{str(batch)[:100]}"):
        return 0
    with engine.db.session() as session:
        telemetry_repo.add_samples(booking.id, readings, engine.now(), session=session)
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
