"""The Slack side of the engine's Notifier: updates booking messages, DMs owners, posts to channels, pages
on-call in the alerts channel. Every send with a key happens once (the key is claimed in the ledger)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.views import booking_message, section_message
from domain.model import Booking
from domain.policy import Policy

__all__ = ["SlackNotifier"]

log = logging.getLogger(__name__)


class SlackNotifier:
    """Notifier over the Slack Web API."""

    def __init__(self, client: WebClient, policy: Policy, once: Callable[[str], bool],
                 pager: Callable[..., None] | None = None) -> None:
        self.client, self.policy, self._once, self._pager = client, policy, once, pager
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

    def direct(self, user: str, text: str, blocks: list | None = None, key: str | None = None) -> None:
        """DM a user (once per key)."""
        if key and not self._once(f"dm:{key}"):
            return
        message = section_message(text) if blocks is None else {"text": text, "blocks": blocks}
        self._call("chat_postMessage", channel=user, **message)

    def post(self, channel: str, text: str, blocks: list | None = None, key: str | None = None) -> None:
        """Post to a channel (once per key)."""
        if key and not self._once(f"post:{key}"):
            return
        message = section_message(text) if blocks is None else {"text": text, "blocks": blocks}
        self._call("chat_postMessage", channel=channel, **message)

    def alert(self, kind: str, key: str, summary: str, severity: str = "error", resolve: bool = False) -> None:
        """Tell on-call once per key and action: in the alerts channel, and through the pager when set."""
        if not self._once(f"alert:{key}:{'resolve' if resolve else 'trigger'}"):
            return
        prefix = "✅ Resolved" if resolve else ("🚨" if severity == "error" else "⚠️")
        if self.policy.team.alerts_channel:
            self._call("chat_postMessage", channel=self.policy.team.alerts_channel,
                       **section_message(f"{prefix} [{kind}] {summary}"))
        if self._pager:
            self._pager(kind=kind, key=key, summary=summary, severity=severity, resolve=resolve)

    def _call(self, method: str, **kwargs) -> dict | None:
        try:
            return getattr(self.client, method)(**kwargs).data
        except SlackApiError as exc:
            log.warning("Slack %s failed: %s", method, exc.response.get("error"))
        except Exception as exc:  # a Slack outage must never break the engine
            log.warning("Slack %s failed: %s", method, type(exc).__name__)
        return None
