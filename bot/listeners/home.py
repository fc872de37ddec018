"""App Home: the place to act from. Opening the tab publishes it; its Book button opens the booking modal, and its
booking buttons go through the message buttons' listeners (bot/listeners/actions.py), which publish it again."""

from __future__ import annotations

import logging

from gpubot.bot.context import BotContext
from gpubot.bot.home_view import BOOK_ACTION, HomeData
from gpubot.bot.home_view import home_view as build_home
from gpubot.bot.listeners.modal import open_book_modal
from gpubot.scheduling.acquisition.queue import queue_view
from gpubot.scheduling.booking.booking import bookings_of
from gpubot.scheduling.money.costs import budget_lines
from slack_bolt import App
from slack_sdk.models.views import View

__all__ = ["from_home", "home_view", "publish_home", "register"]

log = logging.getLogger(__name__)

ENDED_SHOWN = 50  # finished bookings read to find those of the last day


def home_view(ctx: BotContext, user: str) -> View:
    """The Home tab for one user, drawn from the ledger as it is now."""
    with ctx.engine.db.session() as session:
        budgets = budget_lines(ctx.engine, user, None, session=session)
    data = HomeData(user=user, now=ctx.engine.now(), currency=ctx.engine.currency,
                    bookings=bookings_of(ctx.engine, user, include_finished=ENDED_SHOWN),
                    queue=[(entry.position, entry.booking) for entry in queue_view(ctx.engine)], budgets=budgets,
                    replace_grace=ctx.engine.policy.health.replace_grace)
    return build_home(data, ctx.tr_for(user))


def publish_home(ctx: BotContext, client, user: str) -> None:
    """Publish `user`'s Home tab as the ledger stands now."""
    client.views_publish(user_id=user, view=home_view(ctx, user))


def from_home(body: dict) -> bool:
    """Whether an interaction came from the Home tab (it has no message and no response_url)."""
    return (body.get("view") or {}).get("type") == "home"


def register(app: App, ctx: BotContext) -> None:
    """Publish the Home tab whenever a user opens it; its Book button opens the modal."""

    @app.event("app_home_opened")
    def on_home(event, client) -> None:
        if event.get("tab", "home") != "home":
            return
        user = event.get("user")
        if not isinstance(user, str) or not user:  # signed, but not what Slack sends: nothing to publish to
            log.warning("app_home_opened without a user id: ignored")
            return
        publish_home(ctx, client, user)

    @app.action(BOOK_ACTION)
    def on_book(ack, body, client) -> None:
        ack()
        # The trigger lives 3 s: the modal opens now, its quote follows (open_book_modal)
        ctx.later(lambda: open_book_modal(ctx, client, body["trigger_id"], body["user"]["id"]))
