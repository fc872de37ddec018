"""The replay loop: jump from event to event on a virtual clock and let the real engine act at each one.

Events: a submission (book, then acquire as the Slack listener does); a utilisation change (a telemetry sample,
as the agent would push, with the compute processes it sees under `sees_processes`: one per GPU while the job
works, none once it ended); an idle check due (idle `for` after a stretch began, `no_process_for` after a job
ended under `sees_processes`, then the rule's grace after the reminder);
a slot end (the owner extends when the job still runs, else expiry); a queue wake (capacity was freed, a queued
booking's give-up time came, or a transient failure wants a retry); a spot interruption and the reconcile pass
that notices it (scheduling.replay.interrupts); a boot poll (a simulated cloud with a `boot_time` launched a
machine that is not reachable yet: the follower job's pass, every `ready_poll_every`, until it is — the job's work
starts then, its billing at the launch). Between events nothing the engine looks at
changes, so nothing is lost by not ticking.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.db import bookings as repo
from gpubot.domain.errors import Refused
from gpubot.domain.model import Booking, BookingState, OfferRequest
from gpubot.domain.policy import Policy
from gpubot.domain.replay_trace import Stretch, TraceJob, booked_seconds, transitions
from gpubot.domain.spot import fallback_after
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.booting import follow_booting
from gpubot.scheduling.acquisition.cheaper import cheaper_wait
from gpubot.scheduling.booking.booking import BookingAsk, book, cancel, extend
from gpubot.scheduling.booking.waits import expected_wait
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.expiry import expire_due
from gpubot.scheduling.replay.clock import DRAIN, EXTEND, SAMPLE, SUBMIT, VirtualClock
from gpubot.scheduling.replay.interrupts import watch
from gpubot.scheduling.replay.offers import cheapest_free, has_capacity
from gpubot.scheduling.replay.pieces import Piece
from gpubot.scheduling.replay.setup import ReplayConfig
from gpubot.scheduling.replay.telemetry import Telemetry

__all__ = ["Replay", "ReplayInput"]


@dataclass(frozen=True)
class ReplayInput:
    """A parsed trace: its jobs and the utilisation samples of those that have them."""

    jobs: list[TraceJob]
    util: dict[str, list[tuple[int, float]]]


@dataclass
class Replay(Telemetry):
    """One policy's replay of a trace through `engine`."""

    engine: Engine
    clock: VirtualClock
    settings: ReplayConfig
    jobs: list[TraceJob]
    stretches: dict[str, list[Stretch]]
    on_job: Callable[[], None] | None = None  # called when a job of the trace is first submitted
    pieces: list[Piece] = field(default_factory=list)
    active: dict[int, Piece] = field(default_factory=dict)
    queued: dict[int, Piece] = field(default_factory=dict)
    _events: list = field(default_factory=list)
    _seq: itertools.count = field(default_factory=itertools.count)
    _drains: set[datetime] = field(default_factory=set)
    _unsent: list[tuple[int, float, int | None, datetime]] = field(default_factory=list)  # (booking, util,
    # processes, at) pushed
    _submitted: set[str] = field(default_factory=set)  # jobs of the trace submitted at least once

    @property
    def policy(self) -> Policy:
        """The policy replayed."""
        return self.engine.policy

    def at(self, when: datetime, order: int, action: Callable, *args) -> None:
        """Schedule `action(*args)` at virtual time `when`."""
        heapq.heappush(self._events, (when, order, next(self._seq), action, args))

    def run(self) -> list[Piece]:
        """Submit every job at its time, process events until none is left; returns every piece."""
        for job in self.jobs:
            piece = Piece(job, 0, self.clock.start + timedelta(seconds=job.submit_s))
            self.at(piece.submitted, SUBMIT, self.submit, piece)
        while self._events:
            when, _order, _seq, action, args = heapq.heappop(self._events)
            self.clock.move_to(when)
            action(*args)
        self._write_samples()
        return self.pieces

    def _load(self, booking_id: int) -> Booking:
        with self.engine.db.session() as session:
            return repo.get_booking(booking_id, session=session)

    # -- submissions and the queue ------------------------------------------------------------------------
    def _ask(self, piece: Piece, spot: bool) -> BookingAsk:
        job, limit = piece.job, self.policy.booking.max_duration.total_seconds()
        seconds = min(booked_seconds(job.duration_s - piece.offset_s, self.settings.over_booking), limit)
        return BookingAsk(owner=job.user, gpu=job.gpu_type, count=job.gpus, duration=timedelta(seconds=seconds),
                          spot=spot, project=job.project, note=f"trace job {job.key}")

    def _spot_allowed(self, piece: Piece) -> bool:
        hours = (piece.job.duration_s - piece.offset_s) / 3600
        return self.settings.spot and not piece.on_demand and hours <= self.settings.spot_max_hours

    def submit(self, piece: Piece) -> None:
        """Book the piece (a person's `/gpu book`), falling back from spot to on-demand, then acquire it."""
        self.pieces.append(piece)
        if self.on_job and piece.job.key not in self._submitted:
            self._submitted.add(piece.job.key)
            self.on_job()
        booked = None
        for spot in ([True, False] if self._spot_allowed(piece) else [False]):
            try:
                booked = book(self.engine, self._ask(piece, spot))
                piece.spot = spot
                break
            except Refused:
                continue
        if booked is None:
            piece.outcome = "refused"
            return
        piece.booking_id, piece.requested = booked.booking.id, booked.booking.requested_at
        piece.request = booked.booking.request()
        self._acquired(piece, acquire(self.engine, booked.booking.id))

    def _acquired(self, piece: Piece, booking: Booking) -> None:
        if booking.state == BookingState.ACTIVE:
            self.queued.pop(booking.id, None)
            self._started(piece, booking)
        elif booking.state == BookingState.BOOTING:
            self.queued.pop(booking.id, None)
            self.at(self.clock() + self.policy.acquire.ready_poll_every, DRAIN, self.follow, piece, booking.id)
        elif booking.state == BookingState.FAILED:
            self.queued.pop(booking.id, None)
            piece.outcome = "failed"
        elif booking.state == BookingState.QUEUED:
            if booking.id not in self.queued:
                self.at(booking.requested_at + self.policy.acquire.give_up_after, DRAIN, self.drain)
                if booking.spot:
                    # the engine's own rule (its `[replay] spot_fallback_after` is `[spot] fallback_after`), at
                    # its exact moment: the replay retries a queue only when capacity could have freed
                    after = fallback_after(self.policy.spot.fallback_after,
                                           expected_wait(self.engine, booking.gpu).at_hour)
                    self.at(booking.requested_at + after, DRAIN, self.spot_fallback, piece, booking.id)
            self.queued[booking.id] = piece
            if has_capacity(self.engine, booking.request()) and not self._waits_for_cheaper(piece, booking):
                self._wake(self.clock() + self.policy.acquire.poll_every)  # a transient launch failure: retry soon

    def _waits_for_cheaper(self, piece: Piece, booking: Booking) -> bool:
        """Whether the booking stayed queued with capacity free to wait for a cheaper offer (the engine's own
        rule, asked again in the same state): it is retried when that price is free, or when the wait ends."""
        waiting = cheaper_wait(self.engine, booking) if self.policy.acquire.wait_for_cheaper else None
        if waiting is not None and not piece.waited_cheaper:
            self.at(waiting.until, DRAIN, self.drain)
        piece.waits_for = waiting.waits_for.hourly if waiting else None
        piece.waited_cheaper = piece.waited_cheaper or waiting is not None
        return waiting is not None

    def _retry_due(self, piece: Piece, free: dict[OfferRequest, Decimal | None]) -> bool:
        """Whether retrying the queued piece could place it: an offer it would take is free (at most the price it
        waits for, when it waits for a cheaper one), or its give-up time or the end of its wait has come."""
        now, acquire_policy = self.clock(), self.policy.acquire
        if piece.request not in free:
            free[piece.request] = cheapest_free(self.engine, piece.request)
        price, waited = free[piece.request], now - piece.requested
        if waited >= acquire_policy.give_up_after:
            return True
        if piece.waits_for is None:
            return price is not None
        return (price is not None and price <= piece.waits_for) or waited >= acquire_policy.wait_for_cheaper

    def _wake(self, when: datetime) -> None:
        if not any(self.clock() <= t <= when for t in self._drains):
            self._drains.add(when)
            self.at(when, DRAIN, self.drain)

    def drain(self) -> None:
        """Retry queued bookings, oldest first, that could now be placed or whose give-up time has come.

        Retrying one whose shape has no free offer only repeats its "no capacity" round, so it is skipped. The
        shape and request time are the piece's own (what its owner asked for), not read back from the ledger."""
        self._drains.discard(self.clock())
        free: dict[OfferRequest, Decimal | None] = {}
        for booking_id in sorted(self.queued):
            if self._retry_due(self.queued[booking_id], free):
                done = acquire(self.engine, booking_id)
                self._acquired(self.queued[booking_id], done)
                if done.state == BookingState.ACTIVE:
                    free.clear()

    def spot_fallback(self, piece: Piece, booking_id: int) -> None:
        """A spot booking still waiting for spot capacity: its owner cancels it and books the work on demand
        (the wait so far counts in the new booking's)."""
        if self.queued.get(booking_id) is not piece:
            return
        try:
            cancel(self.engine, booking_id, piece.job.user)
        except Refused:  # it left the queue meanwhile: whatever moved it accounts for it
            return
        del self.queued[booking_id]
        piece.outcome = "fell-back"
        self.submit(Piece(piece.job, piece.offset_s, piece.submitted, resumes_from=piece.resumes_from,
                          on_demand=True))

    def follow(self, piece: Piece, booking_id: int) -> None:
        """The follower job's pass for one booting booking (it polls when its poll is due)."""
        follow_booting(self.engine, only=[booking_id])
        self._acquired(piece, self._load(booking_id))

    # -- a running piece -----------------------------------------------------------------------------------
    def _started(self, piece: Piece, booking: Booking) -> None:
        piece.started, piece.ends_at = booking.ready_at or booking.started_at, booking.ends_at
        self.active[booking.id] = piece
        points = transitions(self.stretches.get(piece.job.key, []), piece.offset_s, piece.job.duration_s,
                             self.settings.busy_util)
        for i, (offset, util) in enumerate(points):
            if i == 0 and util >= self.policy.idle.util_below:
                continue  # a busy start needs no sample: only idle stretches and their ends matter
            until = piece.started + timedelta(seconds=points[i + 1][0]) if i + 1 < len(points) else None
            self.at(piece.started + timedelta(seconds=offset), SAMPLE, self.sample, piece, booking.id, util, until)
        self.at(piece.ends_at, EXTEND, self.slot_end, piece, booking.id)
        if booking.spot:
            watch(self, piece, booking)

    def slot_end(self, piece: Piece, booking_id: int) -> None:
        """The slot ends: the owner extends it while the job still runs (within max_duration), else it expires."""
        if booking_id not in self.active or piece.ends_at != self.clock():
            return
        now = self.clock()
        if piece.work_end > now and self._extend(piece, booking_id, piece.work_end - now):
            return
        expire_due(self.engine)
        for other_id, other in list(self.active.items()):
            if other.ends_at and other.ends_at <= now:
                booking = self._load(other_id)
                if booking.state != BookingState.ACTIVE:
                    self._ended(other, booking, "expired-requeued" if other.work_end > now else "placed")

    def _extend(self, piece: Piece, booking_id: int, remaining: timedelta) -> bool:
        held = piece.ends_at - piece.started
        room = int((self.policy.booking.max_duration - held).total_seconds()) // 3600 * 3600
        by = min(booked_seconds(int(remaining.total_seconds()), self.settings.over_booking), room)
        if by <= 0:
            return False
        try:
            extended = extend(self.engine, booking_id, piece.job.user, timedelta(seconds=by))
        except Refused:
            return False
        piece.ends_at, piece.extensions = extended.booking.ends_at, piece.extensions + 1
        self.at(piece.ends_at, EXTEND, self.slot_end, piece, booking_id)
        if extended.booking.spot:
            watch(self, piece, extended.booking)
        return True

    def _ended(self, piece: Piece, booking: Booking, outcome: str) -> None:
        """A running piece was released: account for it, book what is left of the job, wake the queue."""
        now = self.clock()
        del self.active[booking.id]
        piece.outcome = outcome
        piece.ran_s = int((min(now, piece.work_end) - piece.started).total_seconds())
        if outcome == "reclaimed" and piece.ends_at:
            piece.reclaimed_gpu_s = max(0, int((piece.ends_at - now).total_seconds())) * piece.job.gpus
        resume = piece.idle_until if outcome == "reclaimed" and piece.idle_until else now
        if piece.work_end > resume:
            self.at(resume, SUBMIT, self.submit, Piece(piece.job, piece.job_time(resume), resume))
        self._wake(now + self.policy.acquire.poll_every)
