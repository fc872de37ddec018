"""The replay's telemetry events: the agent's samples as a job's utilisation changes, and the idle checks they make
due (the idle rule's `for`, the no-process rule after a job ends, the grace after a reminder). A part of
`scheduling.replay.runner.Replay`, which provides the clock, the engine, the event queue and a piece's end."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.policy import Policy
from gpubot.domain.ports import GpuReading
from gpubot.domain.replay_rules import after_job_end
from gpubot.domain.telemetry import grace_of
from gpubot.scheduling.booking.booking import release
from gpubot.scheduling.lifecycle.idle import idle_pass
from gpubot.scheduling.replay.clock import CHECK
from gpubot.scheduling.replay.pieces import Piece

if TYPE_CHECKING:  # names for the declarations only: the replay's engine, clock and settings
    from gpubot.scheduling.engine import Engine
    from gpubot.scheduling.replay.clock import VirtualClock
    from gpubot.scheduling.replay.setup import ReplayConfig

__all__ = ["Telemetry"]


class Telemetry:
    """The telemetry events of a replay (mixed into `Replay`, which provides what is declared here)."""

    engine: Engine
    clock: VirtualClock
    settings: ReplayConfig
    active: dict[int, Piece]  # running pieces by booking id
    _unsent: list[tuple[int, float, int | None, datetime]]  # (booking, util, processes, at) pushed, not yet stored
    policy: Policy
    at: Callable[..., None]  # schedule an event: (when, order, action, *args)
    _load: Callable[[int], Booking]  # a booking as the ledger holds it
    _ended: Callable[[Piece, Booking, str], None]  # a running piece was released: account for it

    def _push(self, piece: Piece, booking_id: int, util: float) -> None:
        """The agent's reading at this moment. Only the idle check reads telemetry, so readings are stored
        (at their own times) in one transaction just before it runs, not one transaction each."""
        now = self.clock()
        processes = (0 if now >= piece.work_end else 1) if self.settings.sees_processes else None
        self._unsent.append((booking_id, util, processes, now))

    def _write_samples(self) -> None:
        if not self._unsent:
            return
        with self.engine.db.session() as session:
            telemetry_repo.add_readings([(booking_id, GpuReading(0, util, 50.0, processes=processes), at)
                                         for booking_id, util, processes, at in self._unsent], session=session)
        self._unsent.clear()

    def sample(self, piece: Piece, booking_id: int, util: float, until: datetime | None) -> None:
        """The GPUs' utilisation changed: push a sample; an idle stretch gets its idle check."""
        if booking_id not in self.active:
            return
        now = self.clock()
        self._push(piece, booking_id, util)
        idle = util < self.policy.idle.util_below
        piece.idle_from, piece.idle_until, piece.idle_util = (now, until, util) if idle else (None, None, util)
        if idle:
            self.at(now + self.policy.idle.for_, CHECK, self.idle_check, piece, booking_id, now)
        if idle and until is None and self.settings.sees_processes and now >= piece.work_end:
            # the job ended: its processes are gone, so the no-process rule looks `no_process_for` later
            reminder, _release = after_job_end(self.policy.idle, sees_processes=True)
            self.at(now + reminder, CHECK, self.idle_check, piece, booking_id, now)
        if until is None and self._releases_when_done(piece):
            self._ended(piece, release(self.engine, booking_id, piece.job.user), "placed")

    def _releases_when_done(self, piece: Piece) -> bool:
        draw = random.Random(f"{self.settings.seed}:{piece.job.key}:{piece.offset_s}").random()
        return draw < self.settings.release_when_done

    def idle_check(self, piece: Piece, booking_id: int, since: datetime) -> None:
        """The idle rule's moment: the agent's latest reading, then the engine's idle check of this booking."""
        if booking_id not in self.active or piece.idle_from != since:
            return
        self._push(piece, booking_id, piece.idle_util)
        self._write_samples()
        left = idle_pass(self.engine, [booking_id]).left  # each booking as the check left it (skipped: read back)
        booking = left.get(booking_id) or self._load(booking_id)
        if booking.state != BookingState.ACTIVE:
            self._ended(piece, booking, "reclaimed")
        elif self.policy.idle.action == "release" and booking.idle_reminded_at == self.clock():
            grace = grace_of(self.policy.idle, booking.idle_rule)
            self.at(self.clock() + grace, CHECK, self.idle_check, piece, booking_id, since)
