"""Buttons on booking messages: Extend 1h, Release, Cancel, Approve, Deny, Replace. Each click acts once."""

from __future__ import annotations

import logging

from gpubot.bot.context import BotContext
from gpubot.bot.replies import user_error_text
from gpubot.bot.views import extension_text, repeated_extension_text
from gpubot.domain.errors import UserError
from gpubot.domain.model import parse_button_value
from gpubot.scheduling.booking.clicks import Act, act
from slack_bolt import App

__all__ = ["register"]

log = logging.getLogger(__name__)

# Each button's action id and what it asks the engine for; who may act and exactly-once are the engine's
# (scheduling.booking.clicks).
_ACTIONS = {
    "booking_release": Act.RELEASE, "booking_cancel": Act.CANCEL, "booking_approve": Act.APPROVE,
    "booking_deny": Act.DENY, "idle_keep": Act.KEEP, "idle_snooze": Act.SNOOZE, "booking_replace": Act.REPLACE,
    "booking_extend": Act.EXTEND,
}


def register(app: App, ctx: BotContext) -> None:
    """Attach one listener per booking button."""
    for action_id in _ACTIONS:
        app.action(action_id)(_make_listener(ctx, action_id))


def _make_listener(ctx: BotContext, action_id: str):
    def on_click(ack, body, action, respond) -> None:
        ack()
        ctx.later(lambda: _safe_click(ctx, action_id, action, body, respond), respond)
    return on_click


def _safe_click(ctx: BotContext, action_id: str, action: dict, body: dict, respond) -> None:
    try:
        _click(ctx, action_id, action.get("value"), body["user"]["id"], body, respond)
    except UserError as exc:
        respond(text=user_error_text(exc, ctx.tr_for(body["user"]["id"])), response_type="ephemeral",
                replace_original=False)


def _click(ctx: BotContext, action_id: str, value: object, user: str, body: dict, respond) -> None:
    """Parse the click, hand it to the engine, and answer an Extend (the others' messages come from the outbox)."""
    booking_id, seen = parse_button_value(value)
    if action_id == "booking_extend" and seen is None:
        # Without the version it was shown at, every click would look new and extend again.
        raise UserError("That Extend button is from an older message. Use the buttons on the booking's current "
                        "message, or `/gpu extend #{id} 1h`.", id=booking_id)
    message = (body.get("container") or {}).get("message_ts", "")
    acted = act(ctx.engine, _ACTIONS[action_id], booking_id, user, message, seen)
    result = acted.extended
    if result is None:
        return
    tr = ctx.tr_for(user)
    text = repeated_extension_text(result.booking, tr) if result.repeat else extension_text(
        result.booking, result.extension, result.added_cost, result.over_budget, ctx.engine.currency, tr)
    respond(text=text, response_type="ephemeral", replace_original=False)
