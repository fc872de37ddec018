"""The Slack side of the engine's Notifier: updates booking messages, DMs owners, posts to channels, tells
on-call in the alerts channel. Every send with a key happens once (the key is claimed in the ledger)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.views import actions_message, booking_message, section_message
from domain.model import Booking
from domain.policy import Policy
from domain.ports import Action

__all__ = ["SlackNotifier"]

log = logging.getLogger(__name__)


class SlackNotifier:
    """Notifier over the Slack Web API."""

    def __init__(self, client: WebClient, policy: Policy, once: Callable[[str], bool]) -> None:
        self.client, self.policy, self._once = client, policy, once
        self._context: dict[int, list[str]] = {}

    def remember(self, booking: Booking, lines: list[str]) -> None:
        """Keep the quote lines of a booking message so later updates still show them."""
        self._context[booking.id] = lines

    def booking_updated(self, booking: Booking, line: str) -> None:
        """Rewrite the booking's message in place with its new state and progress."""
        if not (booking.channel and booking.message_ts):
            return
        message = booking_message(booking, [*self._context.get(booking.id, []), line], self.policy.team.currency)
        self._call("chat_update", channel=booking.channel, ts=booking.message_ts, **message)

    def direct(self, user: str, text: str, blocks: list | None = None, key: str | None = None,
               actions: list[Action] | None = None) -> None:
        """DM a user (once per key), with buttons for `actions`."""
        if key and not self._once(f"dm:{key}"):
            return
        message = {"text": text, "blocks": blocks} if blocks is not None else actions_message(text, actions or [])
        self._call("chat_postMessage", channel=user, **message)

    def post(self, channel: str, text: str, blocks: list | None = None, key: str | None = None) -> None:
        """Post to a channel (once per key)."""
        if key and not self._once(f"post:{key}"):
            return
        message = section_message(text) if blocks is None else {"text": text, "blocks": blocks}
        self._call("chat_postMessage", channel=channel, **message)

    def alert(self, kind: str, key: str, summary: str, severity: str = "error", resolve: bool = False,
              actions: list[Action] | None = None) -> bool:
        """Deliver an alert (with its buttons) to the alerts channel and on-call DMs; True if all got it.
        (PagerDuty is the engine's Pager, delivered and redelivered on its own.)"""
        prefix = "✅ Resolved" if resolve else ("🚨" if severity == "error" else "⚠️")
        text = f"{prefix} [{kind}] {summary}"
        targets = [t for t in (self.policy.team.alerts_channel, *self.policy.team.oncall) if t]
        return all(self._call("chat_postMessage", channel=t, **actions_message(text, actions or [])) is not None
                   for t in targets)

    def upload(self, channel: str, filename: str, data: bytes, title: str, comment: str,
               key: str | None = None) -> None:
        """Share a file in a channel (once per key): files_upload_v2 gets an upload URL, POSTs the bytes there
        and completes the upload with the channel and comment."""
        if key and not self._once(f"upload:{key}"):
            return
        self._call("files_upload_v2", channel=channel, filename=filename, content=data, title=title,
                   initial_comment=comment)

    def _call(self, method: str, **kwargs) -> dict | None:
        try:
            return getattr(self.client, method)(**kwargs).data
        except SlackApiError as exc:
            log.warning("Slack %s failed: %s", method, exc.response.get("error"))
        except Exception as exc:  # a Slack outage must never break the engine
            log.warning("Slack %s failed: %s", method, type(exc).__name__)
        return None
