"""The /gpu slash command: ack at once, parse with the domain grammar, one engine call, one reply."""

from __future__ import annotations

import logging
from collections.abc import Callable

from gpubot.bot import replies
from gpubot.bot.context import BotContext
from gpubot.domain import grammar
from gpubot.domain.errors import UserError
from slack_bolt import App

__all__ = ["register"]

log = logging.getLogger(__name__)


def register(app: App, ctx: BotContext) -> None:
    """Attach the /gpu command listener."""

    @app.command(ctx.command)
    def on_gpu(ack, command, respond, client) -> None:
        ack()
        ctx.observe_ack(command)
        ctx.later(lambda: _handle(ctx, command, respond, client), respond)


def _handle(ctx: BotContext, command: dict, respond: Callable, client) -> None:
    user = command["user_id"]
    try:
        parsed = grammar.parse(command.get("text", ""), now=ctx.engine.now(),
                               user_tz=ctx.user_tz(client, user, command.get("text", "")), limits=ctx.limits())
        handler = replies.HANDLERS[type(parsed)]
        reply = handler(ctx, parsed, command, client)
    except UserError as exc:
        respond(text=replies.user_error_text(exc, ctx.tr_for(user)), response_type="ephemeral",
                replace_original=False)
        return
    if reply is not None:
        respond(**reply, response_type="ephemeral", replace_original=False)
