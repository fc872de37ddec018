"""Readiness: when to look again at a booting machine, what its booking message says meanwhile, and what happens
once it is reachable — the booking turns active with its Connect line and its owner is owed the ready DM.

The DM is owed in the same transaction that makes the booking active (`ready_dm_due_at`), and the debt is cleared
only after the DM was handed to Slack, so a process killed between the state change and the DM (or during the
DM) still leaves it owed. Whoever turned the booking active sends it at once; a DM still owed READY_DM_GRACE
later (its sender died) is taken by the follower job (the leader; every start-up too), claimed by compare-and-set
so that two replicas never both send it. The Slack notifier's once-keys are claimed before sending: alone they
would lose the DM of a process killed between that claim and the send, so the key here names each claim and a
resend after a crash is not swallowed. The guarantee is at least once; twice only when the process dies in the
moment between Slack accepting the DM and the ledger clearing the debt (issue #19's outbox will own this).

The DM carries an agent token of its own (minted by the sender, kept hashed): the replica that sends it is often
not the one that launched, and the start command's token exists only in that launch.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from gpubot.db import bookings as repo
from gpubot.domain.booting import next_poll_at
from gpubot.domain.durations import format_duration
from gpubot.domain.model import Booking, Instance
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.telemetry import agent_command, agent_launch, issue_agent_token
from gpubot.scheduling.metrics import BOOT_POLLS, BOOT_SECONDS

__all__ = ["READY_DM_GRACE", "announce_ready", "booting_line", "deliver_owed", "poll_at", "ready_line",
           "ready_values"]

READY_DM_GRACE = timedelta(seconds=60)  # longer than a Slack call may take (the client gives up after 30 s)


def poll_at(engine: Engine, booking: Booking, now: datetime, polls: int) -> datetime:
    """When to describe a booking's booting machine next, after `polls` polls (domain.booting's jittered backoff).

    The jitter is drawn from the booking and the poll number: machines launched together still spread out, and a
    replay (or a test) that runs twice polls at the same moments."""
    policy = engine.policy.acquire
    draw = random.Random(f"boot-poll:{booking.id}:{polls}").random()
    return next_poll_at(booking.started_at or now, now, polls, timeout=policy.ready_timeout,
                        base=policy.ready_poll_every, cap=policy.ready_poll_max, draw=draw)


def booting_line(booking: Booking, now: datetime) -> str:
    """`booting on lambda us-east-1 · 2m10s` for the booking message, refreshed at every poll."""
    elapsed = format_duration(now - booking.started_at) if booking.started_at else "0s"
    return f"booting on {booking.provider} {booking.region} · {elapsed}"


def ready_values(now: datetime, instance: Instance) -> tuple[dict, dict]:
    """(booking fields, ledger-only fields) that make a booking active on a reachable `instance`, DM owed."""
    return ({"connect": instance.ssh, "ready_at": now},
            {"next_attempt_at": None, "ready_dm_due_at": now + READY_DM_GRACE})


def announce_ready(engine: Engine, booking: Booking, advice: str | None = None) -> None:
    """Count the boot in the metrics and send the owed ready DM (the caller just turned the booking active)."""
    if booking.started_at and booking.ready_at:
        BOOT_SECONDS.labels(booking.provider or "").observe((booking.ready_at - booking.started_at).total_seconds())
        BOOT_POLLS.labels(booking.provider or "").observe(booking.boot_polls)
    _send(engine, booking, (booking.ready_at or engine.now()) + READY_DM_GRACE, advice)


def deliver_owed(engine: Engine, exclusive: bool = False) -> int:
    """Send every ready DM still owed after its grace (at start-up, `exclusive`: every one owed); how many."""
    now = engine.now()
    due_by = now + READY_DM_GRACE if exclusive else now
    with engine.db.session() as session:
        owed = repo.owed_ready_dms(due_by, session=session)
    sent = 0
    for booking, _due in owed:
        with engine.db.session() as session:
            claimed = repo.claim_ready_dm(booking.id, due_by, now + READY_DM_GRACE, session=session)
        if claimed:
            _send(engine, booking, now + READY_DM_GRACE)
            sent += 1
    return sent


def _send(engine: Engine, booking: Booking, claim: datetime, advice: str | None = None) -> None:
    with engine.db.session() as session:
        token = issue_agent_token(booking.id, session=session, for_dm=True)
    engine.notifier.direct(booking.owner, _ready_text(engine, booking, token, advice),
                           key=f"ready:{booking.id}:{claim.isoformat()}", actions=_release_replaced(booking))
    with engine.db.session() as session:
        repo.set_fields(booking.id, session=session, ready_dm_due_at=None)


def ready_line(booking: Booking) -> str:
    """`lambda us-east-1: ready after 2m10s (5 checks)` for the booking message."""
    where = f"{booking.provider} {booking.region}"
    if not (booking.started_at and booking.ready_at) or booking.ready_at <= booking.started_at:
        return f"{where}: ready"
    checks = f" ({booking.boot_polls} check{'s' if booking.boot_polls != 1 else ''})" if booking.boot_polls else ""
    return f"{where}: ready after {format_duration(booking.ready_at - booking.started_at)}{checks}"


def _ready_text(engine: Engine, booking: Booking, token: str, advice: str | None) -> str:
    extra = "".join(f"\n{line}" for line in (advice, _replacing(engine, booking), _spot_reminder(booking)) if line)
    booted = ""
    if booking.started_at and booking.ready_at and booking.ready_at > booking.started_at:
        booted = f" (it booted in {format_duration(booking.ready_at - booking.started_at)})"
    agent = agent_launch(engine, token)
    telemetry = (f"\nGPU telemetry (for idle and temperature checks), if the machine does not run it already: "
                 f"`{agent_command(agent)}`") if agent else ""
    return (f"{booking.label} is ready: {booking.count}× {booking.gpu} on {booking.provider} {booking.region}"
            f"{booted}. Connect with `{booking.connect}`{telemetry}{extra}")


def _spot_reminder(booking: Booking) -> str | None:
    """A spot booking's owner is reminded that the machine may go at any moment."""
    return "spot: the provider may take it back at any time; save checkpoints." if booking.spot else None


def _release_replaced(booking: Booking) -> list | None:
    """A Release button for the booking a replacement replaces."""
    return [(f"Release #{booking.replaces}", "booking_release", str(booking.replaces))] if booking.replaces else None


def _replacing(engine: Engine, booking: Booking) -> str | None:
    if not booking.replaces:
        return None
    grace = engine.policy.health.replace_grace
    return (f"It replaces #{booking.replaces}, which is released when you click Release on it, or by itself "
            f"{format_duration(grace)} after this one became reachable.")
