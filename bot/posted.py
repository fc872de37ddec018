"""Which notices Slack already shows: every message gpubot posts carries its notice's key in Slack message
metadata (`event_type` gpubot_notice), so a delivery in doubt — the worker that handed it over died, or its call
timed out, before Slack's answer was recorded — first reads the conversation's recent history for that key and
posts only when it is not there. `chat.postMessage` has no idempotency key; this is the closest Slack offers.

Reading history needs the `channels:history`, `groups:history` and `im:history` scopes. Without them (or when the
conversation cannot be read) the message is posted again: a duplicate is better than a notice lost."""

from __future__ import annotations

import logging

from gpubot.bot.views import Message
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

__all__ = ["LOOK_BACK", "NOTICE_EVENT", "PostedNotices", "tagged"]

log = logging.getLogger(__name__)

NOTICE_EVENT = "gpubot_notice"
LOOK_BACK = 200  # recent messages of a conversation searched (a lease is a minute; a busy channel posts less)


def tagged(message: Message, key: str) -> Message:
    """`message` carrying the notice key in its metadata."""
    return Message({**message, "metadata": {"event_type": NOTICE_EVENT, "event_payload": {"key": key}}})


class PostedNotices:
    """Looks up notice keys in Slack conversations."""

    def __init__(self, client: WebClient) -> None:
        self._client = client

    def find(self, key: str, *places: str) -> dict | None:
        """`{"channel", "ts"}` of the message carrying `key` in the first of `places` (channel or user ids) that
        has one, else None. A conversation Slack will not let us read counts as not found (logged); Slack busy,
        down or not answering raises (the notice is tried again later, still in doubt)."""
        for place in places:
            try:
                found = self._find_in(key, place)
            except SlackApiError as exc:
                if exc.response.status_code == 429 or exc.response.status_code >= 500:
                    raise  # Slack busy or down: try again later, still in doubt
                log.warning("could not read %s to see whether notice %s was posted (%s); posting it", place, key,
                            exc.response.get("error"))
                return None
            if found:
                log.info("notice %s was already posted in %s; not posting it again", key, place)
                return found
        return None

    def _find_in(self, key: str, place: str) -> dict | None:
        conversation = place
        if place[:1] in ("U", "W"):  # a person: their DM with the bot (history takes a conversation id)
            conversation = self._client.conversations_open(users=place)["channel"]["id"]
        history = self._client.conversations_history(channel=conversation, limit=LOOK_BACK,
                                                     include_all_metadata=True)
        for message in history.get("messages") or []:
            metadata = message.get("metadata") or {}
            if metadata.get("event_type") == NOTICE_EVENT and (metadata.get("event_payload") or {}).get("key") == key:
                return {"channel": conversation, "ts": message["ts"]}
        return None
