"""A booking as its Slack message shows it: the ledger's row now, the quote it was booked on, and what it costs
at the price it is billed at. Plain data; the engine builds it, the bot words it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from gpubot.domain.model import Booking
from gpubot.domain.notices import BookingRequested

__all__ = ["BookingView"]


@dataclass(frozen=True)
class BookingView:
    """What a booking's message is drawn from, read in one transaction at delivery.

    `quoted` is the quote it was booked on (None for a booking the engine made itself, or one booked before quotes
    were kept); `hourly` the price per GPU-hour it is billed at and `total` what its whole length costs at that
    price (discount tiers applied: its budget effect), both in the team's `currency`, and None until it is placed;
    `replacement` the live booking replacing it (a Replace), if any, which releases it `replace_grace` after it is
    ready at the latest."""

    booking: Booking
    quoted: BookingRequested | None = None
    hourly: Decimal | None = None
    total: Decimal | None = None
    currency: str = "USD"
    replacement: Booking | None = None
    replace_grace: timedelta | None = None

    @property
    def repriced(self) -> bool:
        """Whether it is billed at a price or place other than its first quote (it fell back, or was resumed)."""
        b, q = self.booking, self.quoted
        if q is None or self.hourly is None or not b.provider:
            return False
        return (self.hourly, b.provider, b.region or "") != (q.hourly, q.provider, q.region)
