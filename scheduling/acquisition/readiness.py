"""Readiness: when to look again at a booting machine, what its booking message says meanwhile, and what happens
once it is reachable — the booking turns active with its Connect line and its owner is owed the ready DM.

The DM is a notice (BookingReady) owed through the outbox in the same transaction that makes the booking active
(`ready`), so a process killed between the state change and the DM, or during the DM, still leaves it owed, and
the outbox delivers it exactly once. The DM carries an agent token of its own, which the delivery worker mints
as it hands the DM over (scheduling.delivery): the outbox never stores a secret, and the replica that delivers is
often not the one that launched. DMs owed the older way (`ready_dm_due_at`, before the outbox carried them) are
moved into the outbox at start-up and by the follower job (`deliver_owed`).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from gpubot.db import booking_claims
from gpubot.db import bookings as repo
from gpubot.domain.booting import next_poll_at
from gpubot.domain.model import Booking, Instance
from gpubot.domain.notices import BookingReady, ProgressStep, StepKind
from gpubot.domain.queued_billing import boot_deadline
from gpubot.scheduling.delivery import tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.metrics import BOOT_POLLS, BOOT_SECONDS

__all__ = ["booting_step", "deliver_owed", "observe_boot", "owe_ready_dm", "poll_at", "ready_step", "ready_values"]

LEGACY_GRACE = timedelta(seconds=60)  # how long a DM owed the older way was left to the process that owed it


def poll_at(engine: Engine, booking: Booking, now: datetime, polls: int) -> datetime:
    """When to describe a booking's booting machine next, after `polls` polls (domain.booting's jittered backoff).

    The jitter is drawn from the booking and the poll number: machines launched together still spread out, and a
    replay (or a test) that runs twice polls at the same moments."""
    policy = engine.policy.acquire
    draw = random.Random(f"boot-poll:{booking.id}:{polls}").random()
    launched = booking.started_at or now
    deadline = boot_deadline(launched, now, policy.ready_timeout, policy.queue_timeout)
    return next_poll_at(launched, now, polls, timeout=deadline - launched,
                        base=policy.ready_poll_every, cap=policy.ready_poll_max, draw=draw)


def booting_step(booking: Booking, now: datetime, instance: Instance | None = None) -> ProgressStep:
    """How long the machine has been booting where, for the booking message, refreshed at every poll; while it
    waits in the provider's own queue (a pending Slurm job), the provider's reason (`outcome`) and how long until
    its expected start (`at`, and how long until then: `limit`), when it says."""
    elapsed = now - booking.started_at if booking.started_at else timedelta(0)
    waiting = instance.waiting if instance else None
    expected = instance.expected_start if instance and waiting else None
    return ProgressStep(StepKind.BOOTING, provider=booking.provider or "", region=booking.region or "",
                        elapsed=elapsed, outcome=waiting or "", at=expected,
                        limit=max(expected - now, timedelta(0)) if expected else None)


def ready_values(now: datetime, instance: Instance) -> tuple[dict, dict]:
    """(booking fields, ledger-only fields) that make a booking active on a reachable `instance`."""
    return {"connect": instance.ssh, "ready_at": now}, {"next_attempt_at": None}


def owe_ready_dm(engine: Engine, booking: Booking, *, session, notes: tuple[ProgressStep, ...] = ()) -> None:
    """Owe the owner the ready DM of a booking just made active (with `notes`: advice on the shape it landed on),
    in `session`'s transaction."""
    tell(engine, BookingReady(
        to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
        provider=booking.provider or "", region=booking.region or "", connect=booking.connect,
        ready_at=booking.ready_at, replaces=booking.replaces, started_at=booking.started_at, spot=booking.spot,
        notes=notes, replace_grace=engine.policy.health.replace_grace if booking.replaces else None,
        telemetry_wait=engine.policy.health.telemetry_stale_after if engine.agent_sha256 else None),
        session=session)


def observe_boot(booking: Booking) -> None:
    """Count a booking's boot (seconds and polls to reachable) in the metrics."""
    if booking.started_at and booking.ready_at:
        BOOT_SECONDS.labels(booking.provider or "").observe((booking.ready_at - booking.started_at).total_seconds())
        BOOT_POLLS.labels(booking.provider or "").observe(booking.boot_polls)


def deliver_owed(engine: Engine, exclusive: bool = False) -> int:
    """Move ready DMs owed the older way into the outbox (at start-up, `exclusive`: every one owed); how many."""
    now = engine.now()
    due_by = now + LEGACY_GRACE if exclusive else now
    with engine.db.session() as session:
        owed = booking_claims.owed_ready_dms(due_by, session=session)
    for booking, _due in owed:
        with engine.db.session() as session:
            if booking_claims.claim_ready_dm(booking.id, due_by, now, session=session):
                owe_ready_dm(engine, booking, session=session)
                repo.set_fields(booking.id, session=session, ready_dm_due_at=None)
    return len(owed)


def ready_step(booking: Booking) -> ProgressStep:
    """Where the machine is ready, after how long and how many checks, for the booking message."""
    booted = booking.ready_at - booking.started_at if booking.started_at and booking.ready_at else None
    return ProgressStep(StepKind.READY, provider=booking.provider or "", region=booking.region or "",
                        elapsed=booted if booted and booted > timedelta(0) else None, checks=booking.boot_polls)
