"""A Notifier that records what the bot would have sent during a replay (nothing leaves the process)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gpubot.domain.notices import Audience, IdleReminder, Notice, ProviderAlert
from gpubot.domain.ports import Delivery

__all__ = ["ReplayNotifier"]


@dataclass
class ReplayNotifier:
    """Implements domain.ports.Notifier: counts every kind of message, keeps DMs, sends nothing."""

    counts: Counter = field(default_factory=Counter)
    dms: list[tuple[str, str]] = field(default_factory=list)
    _keys: set[str] = field(default_factory=set)

    def _first(self, key: str | None) -> bool:
        if key is None:
            return True
        if key in self._keys:
            return False
        self._keys.add(key)
        return True

    def deliver(self, notice: Notice) -> Delivery:
        """Count a notice from the outbox as the message it would be: an idle reminder, a page, a DM, an update."""
        if isinstance(notice, IdleReminder):
            self.counts["idle_reminder"] += 1
        elif isinstance(notice, ProviderAlert):
            self.counts[f"alert:{notice.kind}"] += 1
        elif notice.audience is Audience.PERSON:
            self.counts["dm"] += 1
        else:
            self.counts["update" if notice.audience is Audience.BOOKING_MESSAGE else "post"] += 1
        if notice.audience is Audience.PERSON:
            self.dms.append((getattr(notice, "to", ""), type(notice).__name__))
        return Delivery("accepted")

    def upload(self, channel: str, filename: str, data: bytes, title: str, comment: str,
               key: str | None = None) -> None:
        """Count a file upload."""
        if self._first(key and f"upload:{key}"):
            self.counts["upload"] += 1
