"""Buttons on booking messages and on App Home: Extend 1h, Release, Cancel, Approve, Deny, Replace. Each click acts
once. A click on Home has no message and no response_url: its answers come as a DM, and Home is published again."""

from __future__ import annotations

import logging

from gpubot.bot.context import BotContext
from gpubot.bot.listeners.home import from_home, publish_home
from gpubot.bot.replies import user_error_text
from gpubot.bot.views import extension_text, repeated_extension_text
from gpubot.domain.errors import UserError
from gpubot.domain.model import parse_button_value
from gpubot.scheduling.desk.clicks import Act, act
from slack_bolt import App

__all__ = ["register"]

log = logging.getLogger(__name__)

# Each button's action id and what it asks the engine for; who may act and exactly-once are the engine's
# (scheduling.desk.clicks).
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
    def on_click(ack, body, action, respond, client) -> None:
        ack()
        answer = _dm_answer(client, body["user"]["id"]) if from_home(body) else respond
        ctx.later(lambda: _safe_click(ctx, action_id, action, body, answer, client), answer)
    return on_click


def _dm_answer(client, user: str):
    """A `respond` for a click on Home, which has nowhere to answer ephemerally: a DM to the clicker."""
    def answer(text: str, **_options) -> None:
        client.chat_postMessage(channel=user, text=text)
    return answer


def _safe_click(ctx: BotContext, action_id: str, action: dict, body: dict, respond, client) -> None:
    user = body["user"]["id"]
    try:
        _click(ctx, action_id, action.get("value"), user, body, respond)
    except UserError as exc:
        respond(text=user_error_text(exc, ctx.tr_for(user)), response_type="ephemeral", replace_original=False)
    if from_home(body):  # what the click changed, shown where it was made
        publish_home(ctx, client, user)


def _click(ctx: BotContext, action_id: str, value: object, user: str, body: dict, respond) -> None:
    """Parse the click, hand it to the engine, and answer an Extend (the others' messages come from the outbox)."""
    booking_id, seen = parse_button_value(value)
    if action_id == "booking_extend" and seen is None:
        # Without the version it was shown at, every click would look new and extend again.
        raise UserError("That Extend button is from an older message. Use the buttons on the booking's current "
                        "message, or `/gpu extend #{id} 1h`.", id=booking_id)
    container = body.get("container") or {}
    # What the click was made on: the message, or the Home view (its version in the value tells renderings apart)
    message = container.get("message_ts") or (f"home:{container['view_id']}" if container.get("view_id") else "")
    acted = act(ctx.engine, _ACTIONS[action_id], booking_id, user, message, seen)
    result = acted.extended
    if result is None:
        return
    tr = ctx.tr_for(user)
    text = repeated_extension_text(result.booking, tr) if result.repeat else extension_text(
        result.booking, result.extension, result.added_cost, result.over_budget, ctx.engine.currency, tr)
    respond(text=text, response_type="ephemeral", replace_original=False)
