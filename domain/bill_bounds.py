"""What bounds a booking's next billed stretch: the booking as the ledger holds it at the write, not as a billing
pass read it earlier. A pass that read a booking as running (reconcile bills every running booking on each pass)
may meet it released, or on another machine, by the time it writes; it then bills nothing, and the release, which
billed the machine to its end, is the last word."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from gpubot.domain.model import BookingState

__all__ = ["BillingMark", "release_end", "still_billed"]


class BillingMark(NamedTuple):
    """A booking's row as a billing write finds it (under the row's lock): its state, the machine it holds and the
    end of its last billed stretch."""

    state: BookingState
    instance_name: str | None
    billed_until: datetime | None


_RUNNING = frozenset({BookingState.BOOTING, BookingState.ACTIVE})


def still_billed(mark: BillingMark | None, instance_name: str | None, releasing: bool = False) -> bool:
    """Whether the machine `instance_name` may be billed now: the booking still holds it, and it still runs
    (booting or active). Once a release is recorded, the release alone bills the rest (`releasing`), to the
    machine's end."""
    states = {BookingState.RELEASING} if releasing else _RUNNING
    return mark is not None and mark.state in states and mark.instance_name == instance_name


def release_end(mark: BillingMark | None, stopped_at: datetime | None, now: datetime) -> datetime:
    """Where a release's bill ends, its `released_at`: when the machine is known to have stopped (a release
    interrupted after the provider ended it), else now; never before what is already billed (the ledger only
    grows, and no stretch may end after the release)."""
    end = min(stopped_at, now) if stopped_at else now
    billed = mark.billed_until if mark else None
    return max(end, billed) if billed else end
