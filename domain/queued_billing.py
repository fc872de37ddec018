"""When a booking's bill and booked time start, and how long a launched machine may take to start.

A cloud bills from the launch, booting included, so a booking's bill and its booked time (`started_at`, `ends_at`
= start + duration) start at the launch. A provider whose machines cost nothing while they wait in its own queue
(the team's Slurm cluster: a pending job holds no GPU; `ProviderKind.bills_while_queued` False) starts both when
the machine starts running — the provider's own start when it says one (Slurm's StartTime, from which its time
limit also counts), else the moment the booking is seen ready — so the wait is not billed and the booked
duration is whole, ending with the provider's own limit. Until then such a booking has no end (`ends_at` None):
it does not expire while it waits, and budgets hold its estimate (domain.commitment: not placed yet).

A machine that is booting is given up after `ready_timeout`; one that waits in its provider's own queue with a
reason (a pending Slurm job with a start estimate) is not a hung boot, and waits up to `queue_timeout` instead.
"""

from __future__ import annotations

from datetime import datetime, timedelta

__all__ = ["bill_start", "boot_deadline", "end_at_launch", "started_running", "waited_too_long"]


def end_at_launch(launched_at: datetime, duration: timedelta, bills_while_queued: bool) -> datetime | None:
    """The booking's end as its machine is launched: launch + duration, or None (not known until it starts
    running) for a provider that bills nothing while queued."""
    return launched_at + duration if bills_while_queued else None


def started_running(launched_at: datetime, now: datetime, duration: timedelta, provider_start: datetime | None,
                    bills_while_queued: bool) -> dict[str, datetime]:
    """The booking fields a machine seen running at `now` sets: none for a provider that bills from the launch;
    else `started_at` (the provider's own start, kept between the launch and now — Slurm says it to the second —
    else now) and `ends_at` = that + duration."""
    if bills_while_queued:
        return {}
    start = min(max(provider_start, launched_at), now) if provider_start else now
    return {"started_at": start, "ends_at": start + duration}


def bill_start(started_at: datetime | None, ready_at: datetime | None, bills_while_queued: bool
               ) -> datetime | None:
    """Where a booking's current machine starts to be billed: its start (the launch on a provider that bills while
    queued; the moment it started running on one that does not), or None while it has not started running."""
    if bills_while_queued or ready_at is not None:
        return started_at
    return None


def boot_deadline(launched_at: datetime, now: datetime, ready_timeout: timedelta,
                  queue_timeout: timedelta) -> datetime:
    """The moment a booting machine is decided on next: launch + ready_timeout, and once that has passed (only a
    machine waiting in its provider's queue is still booting then) launch + queue_timeout."""
    first = launched_at + ready_timeout
    return first if now < first else max(first, launched_at + queue_timeout)


def waited_too_long(launched_at: datetime, now: datetime, waiting: bool, ready_timeout: timedelta,
                    queue_timeout: timedelta) -> timedelta | None:
    """The limit a booting machine launched at `launched_at` has reached at `now` (`queue_timeout` while it waits
    in its provider's own queue, else `ready_timeout`), or None while it is within it."""
    limit = queue_timeout if waiting else ready_timeout
    return limit if now >= launched_at + limit else None
