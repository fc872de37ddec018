"""Following a launched machine until it can be reached: when to ask the provider again, and when to stop.

No real cloud hands back a reachable machine from its launch call (providers.md §10: Lambda `booting` →
`active` with the IP later, RunPod PROVISIONING → STARTING → RUNNING, AWS `pending` → `running` with the
address later, AutoDL `creating` → `running` with `ssh_command` later). The engine asks `describe` again with
exponential backoff: step n is `base · 2ⁿ` capped at `cap`, and the wait is drawn between half the step and the
whole step ("equal jitter"). The jitter keeps machines launched together from being asked in lock-step (Lambda
allows about one request per second for the whole account); the floor of half a step keeps a poll from coming
almost at once, which full jitter would allow and which spends a request for nothing. The last poll is put
exactly on the deadline, so a timeout is always decided by a fresh look at the machine.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from gpubot.domain.model import Instance, Offer

__all__ = ["burst_due", "burst_target", "is_reachable", "next_poll_at", "poll_delay", "timed_out"]

_MAX_DOUBLINGS = 30  # 2³⁰ steps of any sane base are far past every cap; larger exponents only risk overflow


def is_reachable(instance: Instance) -> bool:
    """True once the provider calls the instance ready and has given the way to reach it (SSH details)."""
    return instance.ready and bool(instance.ssh)


def poll_delay(polls: int, base: timedelta, cap: timedelta, draw: float) -> timedelta:
    """The wait before the next poll after `polls` polls: `min(cap, base · 2^polls)` scaled by 0.5 + draw/2.

    `draw` is a uniform random number in [0, 1] chosen by the caller (this rule stays pure and testable).
    """
    if polls < 0 or not 0.0 <= draw <= 1.0:
        raise ValueError(f"polls must be ≥ 0 and draw in [0, 1], got {polls} and {draw}")
    step = min(cap, base * (2 ** min(polls, _MAX_DOUBLINGS)))
    return step * (0.5 + draw / 2)


def next_poll_at(launched_at: datetime, now: datetime, polls: int, *, timeout: timedelta, base: timedelta,
                 cap: timedelta, draw: float) -> datetime:
    """When to ask again about a machine launched at `launched_at`: after the jittered delay, but never past the
    deadline `launched_at + timeout` (nor before `now`)."""
    deadline = launched_at + timeout
    return max(now, min(now + poll_delay(polls, base, cap, draw), deadline))


def timed_out(launched_at: datetime, now: datetime, timeout: timedelta) -> bool:
    """True once a machine launched at `launched_at` has had `timeout` to become reachable."""
    return now >= launched_at + timeout


def burst_due(launched_at: datetime, now: datetime, after: timedelta | None) -> bool:
    """True once a job waiting in its provider's own queue since `launched_at` has waited `after`
    (`acquire.burst_after`; None: never, it waits like any booting machine)."""
    return after is not None and now - launched_at >= after


def burst_target(ranked: Iterable[Offer], provider: str) -> Offer | None:
    """The best offer (of `ranked`, best first) a booking waiting in `provider`'s own queue would burst to: one of
    another provider that would start at once (available, not queued itself). None: no other provider has the GPUs
    free, so the job keeps its place in the queue rather than be cancelled for nothing."""
    return next((o for o in ranked if o.provider != provider and o.available and not o.queued), None)
