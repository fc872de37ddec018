"""A Notifier that records what would have been sent (the engine's tests run on it).

As the outbox's Slack channel (`deliver`) it words each notice with the bot's own renderers (bot.notices, in
English) and records the result where the older calls record theirs: a DM in `dms`, its action ids in
`dm_actions`, a booking message's new line in `updates` (and the whole message, drawn from the booking the
worker read, in `messages`), a post in `posts`, an alert in `alerts` (its updates,
crossings folded into it, in `alert_updates`), a shared file in `uploads`."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubot.bot.booking_quote import message_of
from gpubot.bot.i18n import ENGLISH
from gpubot.bot.notices import render
from gpubot.domain.booking_view import BookingView
from gpubot.domain.notices import Audience, Notice
from gpubot.domain.ports import Delivery


@dataclass
class RecordingNotifier:
    """Implements domain.ports.Notifier by keeping every delivery."""

    updates: list[tuple[int, str, str]] = field(default_factory=list)
    messages: list[tuple[int, str]] = field(default_factory=list)  # (booking id, its whole message's text)
    dms: list[tuple[str, str]] = field(default_factory=list)
    alerts: list[tuple[str, str, str, bool]] = field(default_factory=list)
    alert_actions: list[list[str]] = field(default_factory=list)
    alert_updates: list[tuple[str, int, str]] = field(default_factory=list)  # (alert key, folded count, text)
    posts: list[tuple[str, str]] = field(default_factory=list)
    dm_actions: list[list[str]] = field(default_factory=list)
    uploads: list[tuple[str, str, bytes, str]] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    slack_down: bool = False  # deliveries are answered "retry" (Slack unreachable)

    def deliver(self, notice: Notice, in_doubt: bool = False, booking: BookingView | None = None) -> Delivery:
        if self.slack_down:
            return Delivery("retry", error="unreachable")
        self.notices.append(notice)
        rendered = render(notice, ENGLISH)
        if rendered.booking_line is not None:
            self.updates.append((getattr(notice, "booking_id", 0), getattr(notice, "state", ""), rendered.booking_line))
            if booking is not None:
                self.messages.append((booking.booking.id, message_of(booking, rendered.booking_line, ENGLISH)["text"]))
        if rendered.upload is not None:
            upload = rendered.upload
            self.uploads.append((notice.channel, upload.filename, upload.data, upload.comment))
        message = rendered.message
        if message is None:
            return Delivery("accepted")
        buttons = [e["action_id"] for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
        if notice.audience is Audience.ONCALL and notice.is_update:
            self.alert_updates.append((notice.alert_key, notice.folded, message["text"]))
        elif notice.audience is Audience.ONCALL:
            self.alerts.append((notice.kind, notice.alert_key, message["text"], notice.resolve))
            self.alert_actions.append(buttons)
        elif notice.audience is Audience.CHANNEL:
            self.posts.append((notice.channel, message["text"]))
        else:
            self.dms.append((notice.to, message["text"]))
            self.dm_actions.append(buttons)
        return Delivery("accepted")
