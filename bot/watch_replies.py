"""Replies for /gpu watch, /gpu watch (alone) or /gpu watches, and /gpu unwatch."""

from __future__ import annotations

from gpubot.bot.context import BotContext
from gpubot.bot.i18n import Translator, duration_for
from gpubot.bot.views import Message, gpu_name, section_message
from gpubot.domain import grammar
from gpubot.domain.watches import Watch
from gpubot.scheduling.desk.watch import add_watch, my_watches, unwatch, watched_duration

__all__ = ["on_unwatch", "on_watch", "on_watches"]


def _line(ctx: BotContext, watch: Watch, tr: Translator) -> str:
    values = {"id": watch.id, "gpus": gpu_name(watch.gpu, watch.count), "provider": watch.provider,
              "duration": duration_for(tr, watched_duration(ctx.engine, watch)),
              "left": duration_for(tr, watch.expires_at - ctx.engine.now())}
    if watch.provider:
        return tr.gettext("#{id} {gpus} for {duration} on {provider} — watching {left} more").format(**values)
    return tr.gettext("#{id} {gpus} for {duration} — watching {left} more").format(**values)


def on_watch(ctx: BotContext, cmd: grammar.Watch, command: dict, client) -> Message:
    """Start a watch: no booking, one DM when the shape can start for the watched duration."""
    user, trigger = command["user_id"], command.get("trigger_id")
    tr = ctx.tr_for(user)
    watch = add_watch(ctx.engine, user, cmd.shape.gpu, cmd.shape.count, cmd.provider, duration=cmd.duration,
                      within=cmd.within, until=cmd.until,
                      request_key=f"cmd:watch:{trigger}:{user}" if trigger else None)
    values = {"id": watch.id, "gpus": gpu_name(watch.gpu, watch.count), "provider": watch.provider,
              "duration": duration_for(tr, watched_duration(ctx.engine, watch)),
              "watch_for": duration_for(tr, watch.expires_at - watch.created_at)}
    if watch.provider:
        text = tr.gettext("👀 Watch #{id}: you get one DM when {gpus} on {provider} can start for {duration}, with a "
                          "Book now button that books it for {duration}. Watching for {watch_for}; `/gpu unwatch "
                          "{id}` stops it.")
    else:
        text = tr.gettext("👀 Watch #{id}: you get one DM when {gpus} can start for {duration}, with a Book now "
                          "button that books it for {duration}. Watching for {watch_for}; `/gpu unwatch {id}` "
                          "stops it.")
    return section_message(text.format(**values), tr)


def on_watches(ctx: BotContext, cmd: grammar.Watches, command: dict, client) -> Message:
    """The caller's active watches."""
    tr = ctx.tr_for(command["user_id"])
    watches = my_watches(ctx.engine, command["user_id"])
    if not watches:
        return section_message(tr.gettext("You watch nothing. Try `/gpu watch h100x8 2h`."), tr)
    return section_message("*" + tr.gettext("Your watches") + "*\n" + "\n".join(_line(ctx, w, tr) for w in watches),
                           tr)


def on_unwatch(ctx: BotContext, cmd: grammar.Unwatch, command: dict, client) -> Message:
    """Stop a watch."""
    tr = ctx.tr_for(command["user_id"])
    watch = unwatch(ctx.engine, cmd.watch_id, command["user_id"])
    return section_message(tr.gettext("Stopped watch #{id} ({gpus}).").format(
        id=watch.id, gpus=gpu_name(watch.gpu, watch.count)), tr)
