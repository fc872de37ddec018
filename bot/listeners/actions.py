"""Buttons on booking messages: Extend 1h, Release, Cancel, Approve, Deny, Replace. Each click acts once."""

from __future__ import annotations

import logging
from datetime import timedelta

from gpubot.bot.context import BotContext
from gpubot.bot.replies import user_error_text
from gpubot.bot.views import extension_text, repeated_extension_text
from gpubot.domain.errors import UserError
from gpubot.domain.model import BookingState, parse_button_value
from gpubot.scheduling.booking import approvals
from gpubot.scheduling.booking.booking import cancel, extend, load_for, release
from gpubot.scheduling.booking.replace import replace_booking
from gpubot.scheduling.lifecycle import idle
from gpubot.scheduling.lifecycle.effects import once
from slack_bolt import App

__all__ = ["register"]

log = logging.getLogger(__name__)

_ACTIONS = {
    "booking_release": lambda ctx, bid, user: _released(ctx, release(ctx.engine, bid, user)),
    "booking_cancel": lambda ctx, bid, user: _cancelled(ctx, cancel(ctx.engine, bid, user)),
    "booking_approve": lambda ctx, bid, user: approvals.approve(ctx.engine, bid, user),
    "booking_deny": lambda ctx, bid, user: approvals.deny(ctx.engine, bid, user),
    "idle_keep": lambda ctx, bid, user: _kept(ctx, load_for(ctx.engine, bid, user)),
    "idle_snooze": lambda ctx, bid, user: _snoozed(ctx, load_for(ctx.engine, bid, user)),
    "booking_replace": lambda ctx, bid, user: replace_booking(ctx.engine, bid, user),
}
_NO_OWNER_CHECK = ("approve", "deny", "replace")  # admins / on-call act on others' bookings; the use case checks


def _kept(ctx: BotContext, booking):
    idle.keep(ctx.engine, booking)  # tells the owner (IdleKept), once per idle stretch
    return booking


def _snoozed(ctx: BotContext, booking):
    idle.snooze(ctx.engine, booking)  # tells the owner (IdleSnoozed), once per snooze
    return booking


def _extend_once(ctx: BotContext, booking_id: int, user: str, key: str, respond) -> None:
    """Extend 1h, once per rendered message: the key is claimed with the extension itself, so a click refused
    (over budget, past the limit) does not swallow a later one."""
    result = extend(ctx.engine, booking_id, user, timedelta(hours=1), request_key=key)
    tr = ctx.tr_for(user)
    if result.repeat:
        text = repeated_extension_text(result.booking, tr)
    else:
        text = extension_text(result.booking, result.extension, result.added_cost, result.over_budget,
                              ctx.engine.currency, tr)
        ctx.notifier.booking_updated(result.booking, text)
    respond(text=text, response_type="ephemeral", replace_original=False)


def _released(ctx: BotContext, booking):
    return _cancelled(ctx, booking) if booking.state == BookingState.CANCELLED else booking


def _cancelled(ctx: BotContext, booking):
    if booking.state == BookingState.CANCELLED:  # a booting one was released, its message already says so
        ctx.notifier.booking_updated(booking, "Cancelled.")
    return booking


def register(app: App, ctx: BotContext) -> None:
    """Attach one listener per booking button."""
    for action_id in [*_ACTIONS, "booking_extend"]:
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
    booking_id, seen = parse_button_value(value)
    if action_id == "booking_extend" and seen is None:
        # Without the version it was shown at, every click would look new and extend again.
        raise UserError("That Extend button is from an older message. Use the buttons on the booking's current "
                        "message, or `/gpu extend #{id} 1h`.", id=booking_id)
    booking = load_for(ctx.engine, booking_id, user) if not action_id.endswith(_NO_OWNER_CHECK) else None
    message = (body.get("container") or {}).get("message_ts", "")
    # What the clicker saw: the message and the booking's version rendered into the button. A bare id (an older
    # message) falls back to the booking as it is now.
    version = seen or (booking.ends_at.isoformat() if booking and booking.ends_at else "")
    key = f"click:{action_id}:{booking_id}:{message}:{version}"
    if action_id == "booking_extend":
        _extend_once(ctx, booking_id, user, key, respond)
        return
    # The clicker is part of the key: a refused click (a non-admin on Approve) must not swallow the admin's.
    if not once(ctx.engine, f"{key}:{user}"):
        return
    _ACTIONS[action_id](ctx, booking_id, user)
