"""Replace and the per-person GPU limit, as pure rules: a replacement runs next to the booking it replaces for at
most `health.replace_grace` after it could be used, and the owner's `booking.max_gpus_per_user` stretches by
exactly that booking's GPUs while it is still held — never by more, and never for another booking."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpubot.domain.model import FINAL_STATES, Booking

__all__ = ["GpuCount", "count_gpus", "replaced_until", "replacements"]


@dataclass(frozen=True)
class GpuCount:
    """What a request would bring its owner to: `held` (held or waited for now) plus `wanted`, against `allowed`
    (the limit, stretched by `stretch`, the GPUs of the booking it replaces while that one is held)."""

    held: int
    wanted: int
    limit: int
    stretch: int = 0

    @property
    def total(self) -> int:
        """GPUs the owner would hold or wait for."""
        return self.held + self.wanted

    @property
    def allowed(self) -> int:
        """The most they may hold or wait for with this request."""
        return self.limit + self.stretch

    @property
    def fits(self) -> bool:
        """Whether the request stays within what is allowed."""
        return self.total <= self.allowed


def count_gpus(held: int, wanted: int, limit: int, replaced: Booking | None = None) -> GpuCount:
    """The count for a request of `wanted` GPUs by an owner holding `held`; `replaced` is the booking it replaces
    (a Replace), which stretches the limit by its GPUs only while it is still held (not ended)."""
    stretch = replaced.count if replaced is not None and replaced.state not in FINAL_STATES else 0
    return GpuCount(held, wanted, limit, stretch)


def replaced_until(replacement: Booking, grace: timedelta) -> datetime | None:
    """When the booking `replacement` replaces is released at the latest: `grace` after the replacement could be
    used (ready, else started); None while it cannot be used yet."""
    began = replacement.ready_at or replacement.started_at
    return began + grace if began else None


def replacements(bookings: Iterable[Booking]) -> dict[int, Booking]:
    """The live replacement of each booking being replaced, by the replaced booking's id."""
    return {b.replaces: b for b in bookings if b.replaces and b.state not in FINAL_STATES}
