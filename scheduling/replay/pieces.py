"""A piece of a trace job: one booking's worth of its work, and what became of it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.domain.model import OfferRequest
from gpubot.domain.replay_trace import TraceJob

__all__ = ["OUTCOMES", "Piece"]

# How every booking of a replay ends: it ran until released or expired; it was reclaimed (its remaining work,
# if any, booked again as a new piece); it expired mid-job and its remaining work was booked again; its spot
# machine was interrupted and its remaining work was booked again, or was dropped (on_preempt = "notify"); its
# acquisition gave up; or booking it was refused.
# A spot booking that found no spot capacity within `spot_fallback_after` fell back: it was cancelled and its work
# booked on demand.
OUTCOMES = ("placed", "reclaimed", "expired-requeued", "interrupted-requeued", "interrupted", "fell-back", "failed",
            "refused")


@dataclass
class Piece:
    """Work of `job` from job time `offset_s` on, submitted at `submitted`."""

    job: TraceJob
    offset_s: int
    submitted: datetime
    booking_id: int | None = None
    requested: datetime | None = None
    request: OfferRequest | None = None  # what its booking asks the clouds for
    started: datetime | None = None
    ends_at: datetime | None = None
    idle_from: datetime | None = None  # the current idle stretch began (wall time), while one lasts
    idle_until: datetime | None = None  # ... and ends
    idle_util: float = 0.0
    ran_s: int = 0
    outcome: str = "pending"
    spot: bool = False
    extensions: int = 0
    reclaimed_gpu_s: int = 0
    interrupted_at: datetime | None = None  # its spot machine was taken back then
    redone_s: int = 0  # work since its last checkpoint, lost at the interruption (done again if resumed)
    dropped_s: int = 0  # work left undone because nothing was booked again after the interruption
    resumes_from: datetime | None = None  # the interruption this piece resumes after
    on_demand: bool = False  # booked on demand after its spot booking fell back
    waits_for: Decimal | None = None  # per hour, the cheaper offer its booking waits for (acquire.wait_for_cheaper)
    waited_cheaper: bool = False  # its booking waited for a cheaper offer at least once

    @property
    def work_end(self) -> datetime:
        """When the job's work is done, if this piece runs uninterrupted."""
        assert self.started is not None
        return self.started + timedelta(seconds=self.job.duration_s - self.offset_s)

    def job_time(self, moment: datetime) -> int:
        """The job's own time (seconds of work since it first started) at wall time `moment`."""
        assert self.started is not None
        return self.offset_s + int((moment - self.started).total_seconds())

    def checkpoint_at(self, moment: datetime, every: timedelta) -> int:
        """The job time its work resumes from after an interruption at `moment`: the job's last checkpoint
        (every `every` of job time, none lost when 0), or its end when it had finished."""
        done = self.job_time(min(moment, self.work_end))
        if done >= self.job.duration_s or not every:
            return done
        step = int(every.total_seconds())
        return max(self.offset_s, done // step * step)

    @property
    def resume_wait_s(self) -> float | None:
        """From the interruption it resumes after to running again, for pieces that did."""
        return (self.started - self.resumes_from).total_seconds() if self.started and self.resumes_from else None

    @property
    def wait_s(self) -> float | None:
        """From asking to running, for pieces that ran."""
        return (self.started - self.submitted).total_seconds() if self.started else None
