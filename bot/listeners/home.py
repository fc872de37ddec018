"""App Home: the user's bookings, the queue, and team spend against budget."""

from __future__ import annotations

import logging

from gpubot.bot.context import BotContext
from gpubot.bot.i18n import money_for
from gpubot.bot.views import status_lines
from gpubot.scheduling.acquisition.queue import queue_view
from gpubot.scheduling.booking.booking import bookings_of
from gpubot.scheduling.money.costs import budget_lines
from slack_bolt import App
from slack_sdk.models.blocks import DividerBlock, HeaderBlock, MarkdownTextObject, SectionBlock
from slack_sdk.models.views import View

__all__ = ["home_view", "register"]

log = logging.getLogger(__name__)


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=text[:2900]))


def home_view(ctx: BotContext, user: str) -> View:
    """The Home tab for one user."""
    with ctx.engine.db.session() as session:
        team = budget_lines(ctx.engine, user, None, session=session)[0]
    queue = queue_view(ctx.engine)
    cur, tr = ctx.engine.currency, ctx.tr_for(user)
    return View(type="home", blocks=[
        HeaderBlock(text=tr.gettext("Your GPU bookings")),
        _section(status_lines(bookings_of(ctx.engine, user), everyone=False, tr=tr,
                              replace_grace=ctx.engine.policy.health.replace_grace)),
        DividerBlock(),
        HeaderBlock(text=tr.gettext("Queue")),
        _section("\n".join(f"{e.position}. {e.booking.label} {e.booking.count}× {e.booking.gpu} (<@{e.booking.owner}>)"
                           for e in queue[:20]) or tr.gettext("Empty.")),
        DividerBlock(),
        HeaderBlock(text=tr.gettext("Team spend this month")),
        _section(tr.gettext("{spent} spent + {committed} committed of {limit} ({percent} %)").format(
            spent=money_for(tr, team.spent, cur), committed=money_for(tr, team.committed, cur),
            limit=money_for(tr, team.limit, cur), percent=team.percent_with())),
    ])


def register(app: App, ctx: BotContext) -> None:
    """Publish the Home tab whenever a user opens it."""

    @app.event("app_home_opened")
    def on_home(event, client) -> None:
        if event.get("tab", "home") != "home":
            return
        user = event.get("user")
        if not isinstance(user, str) or not user:  # signed, but not what Slack sends: nothing to publish to
            log.warning("app_home_opened without a user id: ignored")
            return
        client.views_publish(user_id=user, view=home_view(ctx, user))
