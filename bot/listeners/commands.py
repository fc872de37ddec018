"""The /gpu slash command: ack at once, parse with the domain grammar, one engine call, one reply."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from gpubot.bot import replies
from gpubot.bot.context import BotContext
from gpubot.bot.listeners.modal import on_modal
from gpubot.bot.moments import read_moment
from gpubot.domain import grammar
from gpubot.domain.errors import UserError
from slack_bolt import App

__all__ = ["register", "with_bare_user_ids"]

log = logging.getLogger(__name__)

# The modal lives with the listeners (it answers view submissions too), so replies.py cannot name it.
_HANDLERS: dict[type, Callable] = {**replies.HANDLERS, grammar.OpenBookModal: on_modal}

_USER_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^<>]*)?>")


def with_bare_user_ids(text: str) -> str:
    """The command text with Slack's user mentions (`<@U123>`, `<@U123|name>`) as the bare ids the grammar reads."""
    return _USER_MENTION.sub(r"\1", text)


def register(app: App, ctx: BotContext) -> None:
    """Attach the /gpu command listener."""

    @app.command(ctx.command)
    def on_gpu(ack, command, respond, client) -> None:
        ack()
        ctx.observe_ack(command)
        ctx.later(lambda: _handle(ctx, command, respond, client), respond)


def _handle(ctx: BotContext, command: dict, respond: Callable, client) -> None:
    user = command["user_id"]
    text = with_bare_user_ids(command.get("text", ""))
    try:
        parsed = grammar.parse(text, now=ctx.engine.now(), user_tz=ctx.user_tz(client, user, text),
                               limits=ctx.limits(), moments=read_moment)
        handler = _HANDLERS[type(parsed)]
        reply = handler(ctx, parsed, command, client)
    except UserError as exc:
        respond(text=replies.user_error_text(exc, ctx.tr_for(user)), response_type="ephemeral",
                replace_original=False)
        return
    if reply is not None:
        respond(**reply, response_type="ephemeral", replace_original=False)
