"""A watch: `/gpu watch h100x8 2h` asks to be told once when 8 H100 can start for 2 h; no booking is made."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from gpubot.domain.model import Offer

__all__ = ["WATCH_STATES", "Watch"]

WATCH_STATES = ("active", "fired", "cancelled", "expired")


@dataclass(frozen=True)
class Watch:
    """A person's watch on a shape for a duration, and the offer that fired it (once it has); it lives from
    `created_at` to `expires_at`."""

    id: int
    owner: str
    gpu: str
    count: int
    provider: str | None
    state: str
    created_at: datetime
    expires_at: datetime
    fired_at: datetime | None = None
    offer: Offer | None = None
    duration: timedelta | None = None  # what Book now books; None for a watch stored before it was kept
