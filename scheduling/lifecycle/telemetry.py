"""GPU telemetry: agent tokens, pushed batches, and pulling from providers and Prometheus."""

from __future__ import annotations

import hashlib
import logging
import secrets
import shlex
from collections.abc import Callable, Sequence
from datetime import timedelta

from gpubot.db import bookings as repo
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.errors import ProviderError
from gpubot.domain.model import FINAL_STATES, Booking, BookingState
from gpubot.domain.policy import Policy
from gpubot.domain.ports import AgentLaunch, GpuReading
from gpubot.domain.telemetry import TelemetryRejected
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.effects import once
from gpubot.scheduling.lifecycle.lifecycle import instance_of
from sqlmodel import Session

__all__ = ["AGENT_PATH", "agent_command", "agent_interval", "agent_launch", "issue_agent_token", "pull_telemetry",
           "pushing_booking", "store_push", "token_hash"]

log = logging.getLogger(__name__)

TelemetrySource = Callable[[Booking], list[GpuReading]]

AGENT_PATH = "/agent/gpubot-agent.py"  # where gpubot serves its agent, under GPUBOT_PUBLIC_URL
TOKEN_PREFIX = "gpa_"  # agent tokens are recognisable, so that logs can blank any that a vendor echoes


def token_hash(token: str) -> str:
    """How agent tokens are stored: SHA-256, never the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()


def issue_agent_token(booking_id: int, *, session: Session, for_dm: bool = False) -> str:
    """A fresh random agent token for a booking (only its hash is kept): the start command's, or (`for_dm`) the
    one the ready DM gives, which whichever replica sends that DM mints then (the other stays valid)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(24)
    telemetry_repo.set_token_hash(booking_id, token_hash(token), session=session, for_dm=for_dm)
    return token


def agent_interval(policy: Policy) -> float:
    """Seconds between the agent's pushes: a quarter of the shortest window that reads them (idle, staleness),
    between 1 and 15 s, so short test windows still see several samples."""
    window = min(policy.idle.for_, policy.health.telemetry_stale_after)
    return min(max(window / 4, timedelta(seconds=1)), timedelta(seconds=15)).total_seconds()


def agent_launch(engine: Engine, token: str) -> AgentLaunch | None:
    """What a machine needs to fetch and run the agent gpubot serves; None when this gpubot serves none."""
    if not engine.agent_sha256:
        return None
    base = engine.public_url.rstrip("/")
    return AgentLaunch(base, base + AGENT_PATH, engine.agent_sha256, token, agent_interval(engine.policy))


def agent_command(agent: AgentLaunch) -> str:
    """The line an owner can paste on the machine: download the agent, check its SHA-256, run it."""
    url, name = shlex.quote(agent.download_url), "gpubot-agent.py"
    return (f"curl -fsSL --max-time 60 -o {name} {url} && echo '{agent.sha256}  {name}' | sha256sum -c - && "
            f"(GPUBOT_AGENT_TOKEN={shlex.quote(agent.token)} nohup python3 {name} --url "
            f"{shlex.quote(agent.bot_url)} --interval {agent.interval:g} >gpubot-agent.log 2>&1 &)")


def pushing_booking(engine: Engine, token: str) -> Booking:
    """The booking an agent token pushes for; TelemetryRejected 401 (unknown or ended) or 409 (not active yet)."""
    with engine.db.session() as session:
        booking = telemetry_repo.booking_for_token(token_hash(token), session=session) if token else None
    if booking is None or booking.state in FINAL_STATES or booking.state == BookingState.RELEASING:
        raise TelemetryRejected(401, "unknown or expired agent token")
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
    with engine.db.session() as session:
        telemetry_repo.add_samples(booking.id, list(readings), engine.now(), session=session)
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
