"""Telemetry rules: deciding idleness and overheating from samples (pushed batches are validated at the edge,
gpubot/edge.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpubot.domain.policy_sections import IdlePolicy

__all__ = [
    "BOOKING_ENDED",
    "IDLE",
    "NO_PROCESS",
    "Sample",
    "TelemetryRejected",
    "grace_of",
    "hot_gpus",
    "idle_since",
    "latest_per_gpu",
    "no_process_since",
    "sample_time",
    "utilisation_unknown",
]


BOOKING_ENDED = "booking_ended"  # the one refusal after which the agent stops (401 with this reason)


class TelemetryRejected(ValueError):
    """A pushed batch was refused; `status` is the HTTP status to answer, `reason` a machine-readable word the
    agent acts on (BOOKING_ENDED: stop; anything else: try again later)."""

    def __init__(self, status: int, message: str, reason: str = "", retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.reason, self.retry_after = status, reason, retry_after


@dataclass(frozen=True)
class Sample:
    """One stored GPU reading."""

    gpu_index: int
    util: float | None  # None: the GPU does not report it (MIG), never idle
    temp_c: float | None
    at: datetime
    processes: int | None = None  # compute processes holding the GPU; None: unknown (an older agent, a failed query)


IDLE, NO_PROCESS = "idle", "no_process"  # the rule that found an idle stretch (bookings.idle_rule)


def grace_of(idle: IdlePolicy, rule: str | None) -> timedelta:
    """The grace after an idle reminder of `rule`: the no-process rule's own, else the utilisation rule's."""
    return idle.no_process_grace if rule == NO_PROCESS else idle.grace


def idle_since(samples: Sequence[Sample], below: float, window: timedelta, now: datetime,
               known_start: datetime | None = None) -> datetime | None:
    """When the current idle stretch began, if every GPU has stayed below `below` for at least `window`.

    The stretch starts at the first sample of the trailing run in which every reading is below the threshold;
    it counts only once that run covers `window`. `known_start` is where an earlier check saw this stretch
    begin: when every given sample is below the threshold, the stretch is still that one (the samples
    before them were checked back then), so callers need only fetch recent samples.
    """
    return _quiet_since(samples, lambda s: s.util is not None and s.util < below, window, now, known_start)


def no_process_since(samples: Sequence[Sample], below: float, window: timedelta, now: datetime,
                     known_start: datetime | None = None) -> datetime | None:
    """When the current no-process stretch began, if every GPU has reported no compute process for at least
    `window` (a finished job). An unknown count is never "no process", and neither is a GPU reporting
    utilisation at or above `below` (a process the agent cannot see, in another PID namespace); `known_start`
    as for idle_since."""
    return _quiet_since(samples, lambda s: s.processes == 0 and (s.util is None or s.util < below), window, now,
                        known_start)


def _quiet_since(samples: Sequence[Sample], quiet: Callable[[Sample], bool], window: timedelta, now: datetime,
                 known_start: datetime | None) -> datetime | None:
    """The start of the trailing run of samples that are all `quiet`, once it covers `window`."""
    start = None
    ordered = sorted(samples, key=lambda s: s.at)
    for sample in ordered:
        if not quiet(sample):  # unknown utilisation or process count is not quiet
            start = None
        elif start is None:
            start = sample.at
    if start is not None and known_start is not None and ordered and start == ordered[0].at:
        start = min(start, known_start)
    if start is None or now - start < window:
        return None
    return start


def hot_gpus(latest: Sequence[Sample], max_temp_c: float) -> list[Sample]:
    """The GPUs whose latest reading is above the limit."""
    return [s for s in latest if s.temp_c is not None and s.temp_c > max_temp_c]


def latest_per_gpu(samples: Sequence[Sample]) -> list[Sample]:
    """The newest sample of each GPU, by GPU index."""
    latest: dict[int, Sample] = {}
    for sample in samples:
        if sample.gpu_index not in latest or sample.at >= latest[sample.gpu_index].at:
            latest[sample.gpu_index] = sample
    return [latest[i] for i in sorted(latest)]


def sample_time(now: datetime, interval_s: float) -> datetime:
    """When a pushed batch counts as taken: `now` down to a multiple of the agent interval (whole seconds), so
    every push within one interval is one sample per GPU, whatever replays or floods it."""
    step = max(1, int(interval_s))
    epoch = int(now.timestamp())
    return datetime.fromtimestamp(epoch - epoch % step, tz=now.tzinfo)


def utilisation_unknown(latest: Sequence[Sample]) -> list[int]:
    """The GPUs whose newest reading has no utilisation (MIG-enabled GPUs): their booking is never idle."""
    return [s.gpu_index for s in latest if s.util is None]
