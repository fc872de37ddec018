"""Follow every booting booking until its machine is reachable, or give up on it after `acquire.ready_timeout`
(`acquire.queue_timeout` for a job waiting in its provider's own queue).

A scheduler job (the leader's) polls each booting booking whose next poll (`next_attempt_at`) is due, claiming
the poll first, so a restart or another replica resumes where the last one stopped and two never poll at once.
Each poll calls `describe` once:
- reachable (ready with SSH details): the booking turns active, its message shows the Connect line, the owner
  is owed the ready DM (scheduling.readiness);
- still booting: it is billed up to now (the provider bills from launch; nothing on a provider that bills
  nothing while queued, whose bill and booked time start when it turns ready: domain.queued_billing), its message
  shows how long it has been booting, and the next poll is set by domain.booting's backoff; a describe error is
  not a timeout, only a missed look (the next poll comes as usual, within the timeout);
- gone (describe says terminated) or still not reachable at the deadline: the engine gives up on that machine;
- still waiting in its provider's own queue (Instance.waiting: a pending Slurm job) after `acquire.burst_after`,
  with another provider that has the GPUs free now (domain.booting.burst_target): the engine gives up on it
  (outcome `burst`), cancelling the job, and the round goes on with the providers after it; with none free, the
  job keeps its place in the queue, up to `acquire.queue_timeout` (outcome `queue_timeout`: a job with a reason
  and a start estimate is not a hung boot, which `acquire.ready_timeout` bounds);
- preempted (a spot machine taken back while it booted): settled as any preemption (scheduling.preemption).

Giving up is recorded before the cloud is touched (`released_at` = the end of its billing, `failure` = why),
then the machine is terminated, billed, its attempt recorded (`not_ready` or `vanished`), the owner told, and
acquisition goes on with the next offer — never that provider and region again in this round — or the queue.
A process killed in between resumes the give-up at the next poll: a machine found gone by then is billed to the
recorded moment, one still running is terminated and billed to then.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from gpubot.db import attempts as attempt_repo
from gpubot.db import booking_claims, ledger
from gpubot.db import bookings as repo
from gpubot.domain.booting import burst_due, burst_target, is_reachable
from gpubot.domain.errors import ProviderError
from gpubot.domain.model import Booking, BookingState, Instance
from gpubot.domain.notices import BootAbandoned, ProgressStep, StepKind
from gpubot.domain.queued_billing import bill_start, started_running, waited_too_long
from gpubot.domain.spot import PREEMPTED
from gpubot.scheduling.acquisition.acquire import continue_acquisition, ranked_offers
from gpubot.scheduling.acquisition.preemption import preempted
from gpubot.scheduling.acquisition.readiness import (
    booting_step,
    deliver_owed,
    observe_boot,
    owe_ready_dm,
    poll_at,
    ready_step,
    ready_values,
)
from gpubot.scheduling.delivery import show_progress, tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.metrics import ACQUISITION_ATTEMPTS, PROVIDER_ERRORS
from gpubot.scheduling.money.billing import accrue, bill_from, bill_until, count_spend, instance_of

__all__ = ["follow_booting"]

log = logging.getLogger(__name__)

_NOT_READY, _VANISHED, _BURST, _QUEUE_TIMEOUT = "not_ready", "vanished", "burst", "queue_timeout"
_CLEARED = dict.fromkeys(("provider", "region", "instance_id", "instance_name", "price_per_gpu_hour", "currency",
                          "started_at", "ends_at", "connect", "released_at", "failure"))


def follow_booting(engine: Engine, only: Iterable[int] | None = None) -> int:
    """One pass: poll each booting booking whose poll is due (or only those in `only`), then send the ready DMs
    still owed; returns how many were polled."""
    now = engine.now()
    with engine.db.session() as session:
        due = repo.list_bookings(session=session, states=[BookingState.BOOTING], due_before=now)
    wanted = set(only) if only is not None else None
    polled = sum(_poll(engine, booking, now) for booking in due if wanted is None or booking.id in wanted)
    deliver_owed(engine)
    return polled


def _poll(engine: Engine, booking: Booking, now: datetime) -> bool:
    if booking.started_at is None:
        return False
    with engine.db.session() as session:
        next_poll = poll_at(engine, booking, now, booking.boot_polls + 1)
        claimed = booking_claims.claim_boot_poll(booking.id, now, next_poll, session=session)
    if not claimed:
        return False
    booking = booking.with_(boot_polls=booking.boot_polls + 1)
    instance = _describe(engine, booking)
    gone = instance is not None and instance.status == "terminated"
    if booking.released_at:  # a give-up interrupted by a crash
        _give_up(engine, booking, booking.failure or _NOT_READY, booking.released_at, gone)
    elif instance is not None and instance.status == PREEMPTED:  # a spot machine taken back while it booted
        preempted(engine, booking, instance)
    elif instance is not None and is_reachable(instance):
        _ready(engine, booking, instance, now)
    elif gone:
        _give_up(engine, booking, _VANISHED, _last_seen(engine, booking), gone)
    elif instance is not None and instance.waiting and _burst_due(engine, booking, now):
        _give_up(engine, booking, _BURST, now, gone)
    elif outcome := _timed_out(engine, booking, instance, now):
        _give_up(engine, booking, outcome, now, gone)
    elif instance is not None:
        accrue(engine, booking, now)  # nothing while it waits on a provider that bills nothing while queued
        show_progress(engine, booking, [booting_step(booking, now, instance)])
    return True


def _burst_due(engine: Engine, booking: Booking, now: datetime) -> bool:
    """Whether a job waiting in its provider's own queue has waited `acquire.burst_after` and another provider has
    the GPUs free now (its offers, cached ones first, ranked as a round ranks them): else the job keeps its place."""
    if booking.started_at is None or not burst_due(booking.started_at, now, engine.policy.acquire.burst_after):
        return False
    if not any(name != booking.provider for name in engine.providers):
        return False
    return burst_target(ranked_offers(engine, booking), booking.provider or "") is not None


def _timed_out(engine: Engine, booking: Booking, instance: Instance | None, now: datetime) -> str | None:
    """The give-up a booting machine has reached: `queue_timeout` for a job waiting in its provider's own queue
    past acquire.queue_timeout, `not_ready` for a machine not reachable after acquire.ready_timeout, or None. A
    describe that failed is judged as a waiting job on a provider that bills nothing while queued (whose jobs
    wait there), else as a booting machine."""
    acquire = engine.policy.acquire
    waiting = instance.waiting is not None if instance is not None else \
        not engine.bills_while_queued(booking.provider or "")
    if booking.started_at is None or waited_too_long(booking.started_at, now, waiting, acquire.ready_timeout,
                                                     acquire.queue_timeout) is None:
        return None
    return _QUEUE_TIMEOUT if waiting else _NOT_READY


def _limit(engine: Engine, outcome: str) -> timedelta:
    """The wait a give-up's notice names: burst_after for a job cancelled in its queue, queue_timeout for one that
    waited there too long, else the ready timeout."""
    acquire = engine.policy.acquire
    if outcome == _QUEUE_TIMEOUT:
        return acquire.queue_timeout
    return acquire.burst_after if outcome == _BURST and acquire.burst_after else acquire.ready_timeout


def _describe(engine: Engine, booking: Booking) -> Instance | None:
    """The machine as its provider sees it now, or None when the provider could not say (logged, counted)."""
    provider = engine.providers.get(booking.provider or "")
    if provider is None:
        log.warning("#%s boots on %s, which is not configured any more", booking.id, booking.provider)
        return None
    try:
        return provider.describe(instance_of(booking))
    except ProviderError as exc:
        PROVIDER_ERRORS.labels(booking.provider, exc.kind).inc()
        log.info("describe of booting #%s failed, asking again at the next poll: %s", booking.id, exc)
        return None


def _ready(engine: Engine, booking: Booking, instance: Instance, now: datetime) -> None:
    """Make the booking active; on a provider that bills nothing while queued, its bill and booked time start
    now (at the provider's own start of the machine, when it says one)."""
    shown, ledger_only = ready_values(now, instance)
    booted = booking.with_(state=BookingState.ACTIVE, **shown)  # the boot, from the launch (messages, metrics)
    running = started_running(booking.started_at or now, now, booking.duration, instance.running_since,
                              engine.bills_while_queued(booking.provider or ""))
    ready = booted.with_(**running)
    with engine.db.session() as session:
        moved = repo.transition(booking.id, [BookingState.BOOTING], BookingState.ACTIVE, session=session,
                                **shown, **running, **ledger_only)
        if moved:
            show_progress(engine, ready, [ready_step(booted)], session=session)
            owe_ready_dm(engine, booted.with_(ends_at=ready.ends_at), session=session)
    if moved:  # else released or expired meanwhile
        observe_boot(booted)


def _last_seen(engine: Engine, booking: Booking) -> datetime:
    """The last moment the machine was seen running: where its billing (extended at every poll) ends."""
    with engine.db.session() as session:
        return bill_from(booking, ledger.billed_until(booking.id, session=session)) or booking.started_at


def _give_up(engine: Engine, booking: Booking, outcome: str, end: datetime, gone: bool) -> None:
    """Record the give-up, terminate the machine, bill it to `end` (or to now when it ran on until the terminate),
    record the attempt, tell the owner, and go on placing the booking."""
    if not booking.released_at:
        with engine.db.session() as session:
            repo.set_fields(booking.id, session=session, released_at=end, failure=outcome)
    if not gone and not _terminated(engine, booking):
        return
    ended = end if gone or outcome == _VANISHED else engine.now()
    moved = _settle(engine, booking, outcome, ended)
    if moved is None:
        return
    ACQUISITION_ATTEMPTS.labels(booking.provider, outcome).inc()
    why = _why(engine, booking, outcome, ended)
    continue_acquisition(engine, moved, (booking.provider or "", booking.region or ""), [why])


def _terminated(engine: Engine, booking: Booking) -> bool:
    try:
        engine.providers[booking.provider or ""].terminate(instance_of(booking))
    except (ProviderError, KeyError) as exc:
        log.warning("terminate of booting #%s failed, will retry at the next poll: %s", booking.id, exc)
        return False
    return True


def _settle(engine: Engine, booking: Booking, outcome: str, ended: datetime) -> Booking | None:
    """Bill the machine to `ended`, record the attempt, move the booking back to acquiring (a fresh lease) and
    owe its owner the news, in one transaction; the booking as it goes on, or None when it left `booting`."""
    now = engine.now()
    seconds = (ended - booking.started_at).total_seconds() if booking.started_at else 0.0
    with engine.db.session() as session:
        billed = _billed(engine, booking, ended)
        stretch = bill_until(engine, booking, ended, session=session)
        attempt_repo.complete_intent(booking.instance_name or "", "terminated", now, session=session)
        attempt_repo.record_attempt(booking.id, booking.provider or "", booking.region, booking.gpu, outcome,
                                    int(max(seconds, 0) * 1000), now, session=session,
                                    detail=f"{booking.instance_name} after {booking.boot_polls} polls")
        moved = repo.transition(booking.id, [BookingState.BOOTING], BookingState.ACQUIRING, session=session,
                                next_attempt_at=now + engine.policy.acquire.lease, boot_polls=0, ready_at=None,
                                **_CLEARED)
        if moved:
            tell(engine, BootAbandoned(
                to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                provider=booking.provider or "", region=booking.region or "", instance=booking.instance_name or "",
                outcome=outcome, ran=billed, limit=_limit(engine, outcome)),
                session=session)
    count_spend(engine, booking, stretch)
    return booking.with_(state=BookingState.ACQUIRING, boot_polls=0, **_CLEARED) if moved else None


def _billed(engine: Engine, booking: Booking, ended: datetime) -> timedelta:
    """How long the machine given up is billed: from its launch to `ended`, or nothing for a job that never left
    the queue of a provider that bills nothing while queued."""
    start = bill_start(booking.started_at, booking.ready_at, engine.bills_while_queued(booking.provider or ""))
    return max(ended - start, timedelta(0)) if start else timedelta(0)


def _why(engine: Engine, booking: Booking, outcome: str, ended: datetime) -> ProgressStep:
    """The step that starts the next round's trail: why the machine was given up, how long it was billed."""
    ran = _billed(engine, booking, ended)
    return ProgressStep(StepKind.BOOT_ABANDONED, provider=booking.provider or "", region=booking.region or "",
                        outcome=outcome, elapsed=ran, limit=_limit(engine, outcome))
