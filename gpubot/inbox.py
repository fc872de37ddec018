"""The inbox: a signed slash command or interaction is recorded before its ack and marked done when all its work
(the listener and what it handed to ctx.later) has finished; on start, the commands a crashed process left
unfinished are answered through their response_url: interrupted, send it again.

On a SQLite ledger the inbox has a file of its own (`Database.inbox`), so recording never waits for the ledger's
write lock."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

from slack_sdk.webhook import WebhookClient

from gpubot.bot.tickets import Ticket
from gpubot.db import inbox
from gpubot.db.database import Database

__all__ = ["DUPLICATE", "INTERRUPTED_TEXT", "answer_unfinished", "ticket_for"]

log = logging.getLogger(__name__)

INTERRUPTED_TEXT = ("⚠️ gpubot restarted while it was working on your request, so it may not have finished. "
                    "`/gpu status` shows where your bookings stand; please send the command again.")
RESPONSE_URL_LIFETIME = timedelta(minutes=30)  # Slack's response_url stops answering after this


class _Duplicate:
    """What `ticket_for` gives for a body the inbox already holds: acked, never dispatched again."""

    def __repr__(self) -> str:
        return "DUPLICATE"


DUPLICATE = _Duplicate()


def _kind_and_url(body: str) -> tuple[str, str | None, str | None] | None:
    """(kind, response_url, request key) of a slash command or interaction body; None for anything else (events).
    The request key is Slack's own id of the request (its trigger_id, with the sender): the same for every copy of
    one request whatever its bytes, so one re-encoded on the way is still the same request."""
    if body.startswith("payload="):
        try:
            payload = json.loads(parse_qs(body).get("payload", ["{}"])[0])
        except ValueError:
            return None
        if not isinstance(payload, dict):
            return None
        urls = payload.get("response_urls") or [{}]
        url = payload.get("response_url") or (urls[0] or {}).get("response_url")
        user = payload.get("user") if isinstance(payload.get("user"), dict) else {}
        return "interaction", url if isinstance(url, str) else None, _request_key(payload.get("trigger_id"),
                                                                                   user.get("id"))
    if body.startswith("{"):
        return None
    form = parse_qs(body)
    if not form.get("command"):
        return None
    return ("command", (form.get("response_url") or [None])[0],
            _request_key((form.get("trigger_id") or [None])[0], (form.get("user_id") or [None])[0]))


def _request_key(trigger_id: object, user: object) -> str | None:
    """A request's key from Slack's trigger_id (new for every command, click and submission) and its sender."""
    if isinstance(trigger_id, str) and trigger_id and isinstance(user, str):
        return f"trigger:{user}:{trigger_id}"
    return None


def ticket_for(database: Database, body: str, now: Callable[[], datetime] = lambda: datetime.now(UTC)
               ) -> Ticket | _Duplicate | None:
    """Record a signed body in the inbox (before the ack) and the ticket that marks it done; None for events;
    DUPLICATE for a request already recorded — a Slack retry (X-Slack-Retry-Num), a re-signed, re-encoded or
    replayed copy, a copy racing the first: the inbox is the one dedup for commands, so it is acked and not
    dispatched again (the first delivery's ticket marks it done). A request is known by its trigger_id (every copy
    of one command, click or submission carries the same), else by its bytes."""
    found = _kind_and_url(body)
    if found is None:
        return None
    key, store = hashlib.sha256((found[2] or body).encode()).hexdigest(), database.inbox
    with store.transaction() as connection:
        if not inbox.record(key, found[0], found[1], now(), session=connection):
            return DUPLICATE

    def done() -> None:
        with store.transaction() as connection:
            inbox.finish(key, "finished", now(), session=connection)
    return Ticket(done)


def answer_unfinished(database: Database, now: datetime | None = None) -> int:
    """Tell the sender of every command a crashed process left unfinished that it was interrupted (through its
    response_url, while Slack still accepts it), and mark it done; how many were answered. On SQLite the ledger's
    own inbox table is read too: rows left there before the inbox had its own file."""
    now = now or datetime.now(UTC)
    stores = dict.fromkeys((database.inbox, database))
    return sum(_answer_unfinished_in(store, now) for store in stores)


def _answer_unfinished_in(database: Database, now: datetime) -> int:
    with database.session() as session:
        left = inbox.unfinished(session=session)
    answered = 0
    for command in left:
        received = command.received_at if command.received_at.tzinfo else command.received_at.replace(tzinfo=UTC)
        if command.response_url and now - received < RESPONSE_URL_LIFETIME:
            try:
                WebhookClient(command.response_url, timeout=10).send(text=INTERRUPTED_TEXT, response_type="ephemeral",
                                                                     replace_original=False)
                answered += 1
            except Exception as exc:
                log.warning("could not tell a sender their %s was interrupted (%s)", command.kind, type(exc).__name__)
        with database.session() as session:
            inbox.finish(command.key, "interrupted", now, session=session)
    if left:
        log.info("start-up: %d unfinished Slack request(s) from before a restart, %d told to send again",
                 len(left), answered)
    return answered
