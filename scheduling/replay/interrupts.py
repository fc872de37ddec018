"""Spot interruptions in a replay.

A simulated cloud with `spot_interruptions_per_hour` takes each spot machine back at a time drawn when it was
launched (providers.simulated). The piece's work stops there: the owner's later events for it (samples, idle
checks, release, slot end) no longer happen. The engine learns of it where production does, on the next
reconcile pass (`scheduler.reconcile_every`, counted from the replay's start), and settles it with the same
code (scheduling.preemption): billed to the interruption, the time left booked again as a booking that resumes
it (`[spot] on_preempt = "requeue"`), which the replay acquires at once, as the queue drain would a tick later.
The job resumes from its last checkpoint (`[replay] checkpoint_every` of job time); the work since then is done
again. With on_preempt = "notify" nothing is booked again and the job's remaining work is dropped.
"""

from __future__ import annotations

import math
from datetime import datetime

from gpubot.domain.model import Booking
from gpubot.domain.spot import PREEMPTED
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.preemption import preempted
from gpubot.scheduling.booking.booking import release
from gpubot.scheduling.money.billing import instance_of
from gpubot.scheduling.replay.pieces import Piece

__all__ = ["INTERRUPT", "NOTICE", "watch"]

INTERRUPT, NOTICE = -2, -1  # event orders: before anything else due at the same moment


def watch(replay, piece: Piece, booking: Booking) -> None:
    """Schedule the interruption of a spot piece's machine, if its cloud takes it back within the piece's slot
    (called again when the slot is extended): a later one never happens, and its event would only stretch the
    replayed span, and with it the pools' fees."""
    cloud = replay.engine.providers.get(booking.provider or "")
    when = cloud.interruption_at(booking.instance_id) if hasattr(cloud, "interruption_at") else None
    if when is not None and piece.ends_at is not None and when <= piece.ends_at:
        replay.at(when, INTERRUPT, _interrupt, replay, piece, booking.id)


def _interrupt(replay, piece: Piece, booking_id: int) -> None:
    if replay.active.get(booking_id) is not piece:
        return  # it ended before (its machine was terminated, so nothing was taken back)
    del replay.active[booking_id]
    piece.interrupted_at = replay.clock()
    replay.at(_next_pass(replay, piece.interrupted_at), NOTICE, _notice, replay, piece, booking_id)


def _next_pass(replay, moment: datetime) -> datetime:
    every = replay.policy.scheduler.reconcile_every
    return replay.clock.start + math.ceil((moment - replay.clock.start) / every) * every


def _notice(replay, piece: Piece, booking_id: int) -> None:
    """The reconcile pass finds the preempted machine; the engine settles it (unless it expired meanwhile)."""
    engine = replay.engine
    booking = replay._load(booking_id)
    instance = engine.providers[booking.provider].describe(instance_of(booking))
    resumed = preempted(engine, booking, instance) if instance.status == PREEMPTED else None
    _account(replay, piece, resumed)


def _account(replay, piece: Piece, resumed: Booking | None) -> None:
    now, at = replay.clock(), piece.interrupted_at
    requeue = replay.policy.spot.on_preempt == "requeue"
    resume_at = piece.checkpoint_at(at, replay.settings.checkpoint_every)
    piece.ran_s = int((min(at, piece.work_end) - piece.started).total_seconds())
    left = piece.job.duration_s - resume_at
    piece.outcome = "interrupted-requeued" if left > 0 and requeue else "interrupted"
    piece.redone_s = piece.job_time(min(at, piece.work_end)) - resume_at  # lost since its checkpoint
    piece.dropped_s = 0 if requeue else left
    if resumed is not None and left > 0:
        nxt = Piece(piece.job, resume_at, now, booking_id=resumed.id, requested=resumed.requested_at,
                    request=resumed.request(), spot=resumed.spot, resumes_from=at)
        replay.pieces.append(nxt)
        replay._acquired(nxt, acquire(replay.engine, resumed.id))
    elif resumed is not None:
        release(replay.engine, resumed.id, piece.job.user)  # the job had finished: its owner cancels the rest
    elif left > 0 and requeue:  # the engine booked nothing (too little left, or it expired meanwhile)
        replay.submit(Piece(piece.job, resume_at, now, resumes_from=at))
    replay._wake(now + replay.policy.acquire.poll_every)
