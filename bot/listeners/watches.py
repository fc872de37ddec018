"""The Book now button of a watch DM: books exactly the offer the watch found, once."""

from __future__ import annotations

from gpubot.bot.context import BotContext
from gpubot.bot.replies import user_error_text
from gpubot.domain.errors import UserError
from gpubot.domain.model import parse_button_value
from gpubot.scheduling.desk.watch import book_watched
from slack_bolt import App

__all__ = ["BOOK_WATCHED", "register"]

BOOK_WATCHED = "watch_book"  # the action id of a watch DM's Book now button


def register(app: App, ctx: BotContext) -> None:
    """Attach the watch_book listener."""
    app.action(BOOK_WATCHED)(_make_listener(ctx))


def _make_listener(ctx: BotContext):
    def on_click(ack, body, action, respond) -> None:
        ack()
        ctx.later(lambda: _book(ctx, action.get("value"), body["user"]["id"], respond), respond)
    return on_click


def _book(ctx: BotContext, value: object, user: str, respond) -> None:
    # Once-only without a click claim: the booking's request key is the watch, so a second click (or a
    # retried one) finds the first booking, while a refused click can be tried again.
    try:
        book_watched(ctx.engine, parse_button_value(value)[0], user)
    except UserError as exc:
        respond(text=user_error_text(exc, ctx.tr_for(user)), response_type="ephemeral", replace_original=False)
