"""A watch: `/gpu watch h100x8` asks to be told once when that shape is free; no booking is made."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gpubot.domain.model import Offer

__all__ = ["WATCH_STATES", "Watch"]

WATCH_STATES = ("active", "fired", "cancelled", "expired")


@dataclass(frozen=True)
class Watch:
    """A person's watch on a shape, and the offer that fired it (once it has)."""

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
