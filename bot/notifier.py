"""The Slack side of the engine's Notifier: the outbox's Slack channel.

`deliver` (called by the outbox's worker, scheduling.delivery) renders a notice (bot.notices), posts a new
booking's message (BookingRequested: in its channel, else to its owner; the worker records where, so a redelivery
posts nothing), updates a booking's message in place (chat.update: a redelivery shows nothing twice), sends its
message to its one reader (a person, a channel, or one on-call reader: each is its own outbox row) or shares its
file, and answers what Slack made of it: accepted, retry (429 with its Retry-After, 5xx, unreachable), refused,
or unreachable (a channel gone: the worker owes the admins instead). Repeats are dropped by the outbox's keys;
a row in doubt (its last hand-over died or timed out) is first looked for in Slack (bot.posted).
A booking's message is drawn whole (bot.booking_quote) from the BookingView the worker read with the claim, in its
owner's language at delivery: nothing rendered is kept."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from gpubot.bot.booking_quote import STATE_LINES, message_of
from gpubot.bot.i18n import ENGLISH, Translator
from gpubot.bot.notices import Rendered, Upload, render
from gpubot.bot.posted import PostedNotices, tagged
from gpubot.bot.views import Message
from gpubot.domain.booking_view import BookingView
from gpubot.domain.notices import Audience, Notice, ProviderAlert
from gpubot.domain.policy import Policy
from gpubot.domain.ports import Delivery
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

__all__ = ["SlackNotifier"]

log = logging.getLogger(__name__)

Reader = Callable[[str], Translator]  # a Slack user id ("" for the team) → what they read in


class SlackNotifier:
    """Notifier over the Slack Web API."""

    def __init__(self, client: WebClient, policy: Policy, sender: WebClient | None = None,
                 reader: Reader | None = None) -> None:
        self.client, self.policy = client, policy
        self._sender = sender or client  # the outbox's client: no sleeping retries, the outbox retries
        self._reader = reader or (lambda _user: ENGLISH)
        self._posted = PostedNotices(self._sender)

    def deliver(self, notice: Notice, in_doubt: bool = False, booking: BookingView | None = None) -> Delivery:
        """Render `notice` and send it: its booking's message updated (in its owner's language), then its message
        to its readers (in theirs; a channel or on-call in the team's). Every message carries the notice's key in
        its metadata; `in_doubt` (an earlier try may have posted it), a message already there is not posted.
        `booking`: the notice's booking as the worker read it with the claim, which its message is drawn from."""
        try:
            if notice.audience is Audience.NEW_BOOKING_MESSAGE:
                return Delivery("accepted", posted=self._post_booking(notice, booking, in_doubt))
            self._update_booking(notice, booking)
            rendered = render(notice, self._reader(_reader_of(notice)))
            if rendered.message is not None:
                self._send(notice, rendered, in_doubt)
            if rendered.upload is not None:
                self._share(notice, rendered.upload)
        except SlackApiError as exc:
            verdict = _verdict(exc, notice)
            return replace(verdict, maybe_sent=in_doubt) if verdict.status == "retry" else verdict
        except Exception as exc:  # unreachable, timed out: Slack may have taken it, or may take it later
            return Delivery("retry", error=type(exc).__name__, maybe_sent=True)
        return Delivery("accepted")

    def _post_booking(self, notice: Notice, view: BookingView | None, in_doubt: bool) -> tuple[str, str] | None:
        """Post a new booking's message (in its channel, else to its owner); where it went, for the worker to
        record. A redelivery finds the message recorded (or, in doubt, already in Slack) and posts nothing."""
        if view is None or view.booking.message_ts:
            return None
        booking = view.booking
        tr = self._reader(booking.owner)
        state = STATE_LINES.get(booking.state.value)
        message = message_of(view, tr.gettext(state) if state else None, tr)
        posted = in_doubt and self._posted.find(notice.key, *filter(None, (booking.channel, booking.owner)))
        response = posted or self._post_where_it_can(booking.channel, booking.owner, tagged(message, notice.key))
        return response["channel"], response["ts"]

    def _post_where_it_can(self, channel: str | None, owner: str, message: Message) -> dict:
        """Post in `channel`; when it is gone or closed to the bot (or there is none), to `owner` by DM."""
        if channel:
            try:
                return self._sender.chat_postMessage(channel=channel, **message)
            except SlackApiError as exc:
                if exc.response.get("error") not in _NOT_THERE:
                    raise
                log.info("posting a booking message to %s failed (%s); DMing its owner", channel,
                         exc.response.get("error"))
        return self._sender.chat_postMessage(channel=owner, **message)

    def _update_booking(self, notice: Notice, view: BookingView | None) -> None:
        if view is None or not (view.booking.channel and view.booking.message_ts):
            return
        tr = self._reader(view.booking.owner)
        line = render(notice, tr).booking_line
        if line is None:
            return
        message = message_of(view, line, tr)
        self._sender.chat_update(channel=view.booking.channel, ts=view.booking.message_ts, **message)

    def _send(self, notice: Notice, rendered: Rendered, in_doubt: bool) -> None:
        message = tagged(rendered.message, notice.key)  # type: ignore[arg-type]
        if notice.audience is Audience.ONCALL:
            # Each reader has its own row (its target); a row owed before that went to all of them at once.
            target = getattr(notice, "target", "")
            readers = [target] if target else [self.policy.team.alerts_channel, *self.policy.team.oncall]
        else:
            readers = [notice.channel if notice.audience is Audience.CHANNEL else notice.to]  # type: ignore[attr-defined]
        update = isinstance(notice, ProviderAlert) and notice.is_update
        for reader in filter(None, readers):
            if in_doubt and not update and self._posted.find(notice.key, reader):
                continue  # (an update is only ever a chat.update: done twice, it shows nothing twice)
            trigger = self._trigger_of(notice, reader)
            if trigger is not None:  # a resolve or an update rewrites its trigger's message: nothing new to read.
                # The message keeps its trigger's key, so a later update (or the resolve) finds it again.
                rewritten = tagged(rendered.message, notice.trigger_key)  # type: ignore[arg-type,attr-defined]
                self._sender.chat_update(channel=trigger["channel"], ts=trigger["ts"], **rewritten)
            elif update:
                log.info("the message of alert %s is not found in %s: its update is not shown", notice.key, reader)
            else:
                self._sender.chat_postMessage(channel=reader, **message)

    def _trigger_of(self, notice: Notice, reader: str) -> dict | None:
        """Where the trigger a resolve closes (or an update rewrites) was posted to `reader` (None: neither, or
        not found)."""
        if not (isinstance(notice, ProviderAlert) and (notice.resolve or notice.folded)):
            return None
        return self._posted.find(replace(notice, target=reader).trigger_key, reader) or \
            self._posted.find(replace(notice, target="").trigger_key, reader)

    def _share(self, notice: Notice, upload: Upload) -> None:
        """Share a file in the notice's channel: files_upload_v2 gets an upload URL, POSTs the bytes there and
        completes the upload with the channel and comment (only that shows it, so a retry shows it once). A user
        (an admin, when the channel is gone) goes in `channels`: Slack's `channel_id` takes channel ids only."""
        where = notice.channel  # type: ignore[attr-defined]
        target = {"channels": [where]} if where[:1] in ("U", "W") else {"channel": where}
        self._sender.files_upload_v2(filename=upload.filename, content=upload.data, title=upload.title,
                                     initial_comment=upload.comment, **target)


def _reader_of(notice: Notice) -> str:
    """Whose language a notice's message is in: its person's, or the team's ("") for a channel or on-call."""
    return "" if notice.audience in (Audience.CHANNEL, Audience.ONCALL) else getattr(notice, "to", "")


_NOT_THERE = ("not_in_channel", "channel_not_found", "is_archived")
_TRY_AGAIN = ("ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout")


def _verdict(exc: SlackApiError, notice: Notice) -> Delivery:
    """What a Slack error means for the notice: wait (429, with its Retry-After), try again later, never, or
    never there (a channel gone or closed to the bot: its owners, the admins, are to hear it instead)."""
    error = str(exc.response.get("error") or "")
    status = exc.response.status_code
    if notice.audience is Audience.CHANNEL and error in _NOT_THERE:
        return Delivery("unreachable", error=error)
    if status == 429 or error == "ratelimited":
        after = exc.response.headers.get("Retry-After") or exc.response.headers.get("retry-after")
        return Delivery("retry", float(after) if after else None, "ratelimited")
    if status >= 500 or error in _TRY_AGAIN:
        return Delivery("retry", error=error or f"http {status}")
    return Delivery("refused", error=error or f"http {status}")
