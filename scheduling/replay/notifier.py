"""A Notifier that records what the bot would have sent during a replay (nothing leaves the process)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gpubot.domain.booking_view import BookingView
from gpubot.domain.notices import Audience, DigestChart, IdleReminder, Notice, ProviderAlert
from gpubot.domain.ports import Delivery

__all__ = ["ReplayNotifier"]


@dataclass
class ReplayNotifier:
    """Implements domain.ports.Notifier: counts every kind of message, keeps DMs, sends nothing."""

    counts: Counter = field(default_factory=Counter)
    dms: list[tuple[str, str]] = field(default_factory=list)

    def deliver(self, notice: Notice, in_doubt: bool = False, booking: BookingView | None = None) -> Delivery:
        """Count a notice from the outbox as the message it would be: an idle reminder, a page, a DM, an update."""
        if isinstance(notice, DigestChart):
            self.counts["upload"] += 1
        elif isinstance(notice, IdleReminder):
            self.counts["idle_reminder"] += 1
        elif isinstance(notice, ProviderAlert):  # a folded crossing rewrites its alert's message: an update
            self.counts[f"{'alert_update' if notice.is_update else 'alert'}:{notice.kind}"] += 1
        elif notice.audience is Audience.PERSON:
            self.counts["dm"] += 1
        else:
            self.counts["update" if notice.audience is Audience.BOOKING_MESSAGE else "post"] += 1
        if notice.audience is Audience.PERSON:
            self.dms.append((getattr(notice, "to", ""), type(notice).__name__))
        return Delivery("accepted")
