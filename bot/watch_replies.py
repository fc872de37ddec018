"""Replies for /gpu watch, /gpu watch (alone) or /gpu watches, and /gpu unwatch."""

from __future__ import annotations

from bot.context import BotContext
from bot.views import Message, gpu_name, section_message
from domain import grammar
from domain.durations import format_duration
from domain.watches import Watch
from scheduling.watch import add_watch, my_watches, unwatch

__all__ = ["on_unwatch", "on_watch", "on_watches"]


def _line(ctx: BotContext, watch: Watch) -> str:
    where = f" on {watch.provider}" if watch.provider else ""
    left = format_duration(watch.expires_at - ctx.engine.now())
    return f"#{watch.id} {gpu_name(watch.gpu, watch.count)}{where} — {left} left"


def on_watch(ctx: BotContext, cmd: grammar.Watch, command: dict, client) -> Message:
    """Start a watch: no booking, one DM when the shape is free."""
    watch = add_watch(ctx.engine, command["user_id"], cmd.shape.gpu, cmd.shape.count, cmd.provider, cmd.for_)
    return section_message(f"👀 Watching {gpu_name(watch.gpu, watch.count)}"
                           f"{' on ' + watch.provider if watch.provider else ''} for "
                           f"{format_duration(watch.expires_at - watch.created_at)} (watch #{watch.id}). You get one "
                           f"DM with a Book now button when it is free; `/gpu unwatch {watch.id}` stops it.")


def on_watches(ctx: BotContext, cmd: grammar.Watches, command: dict, client) -> Message:
    """The caller's active watches."""
    watches = my_watches(ctx.engine, command["user_id"])
    if not watches:
        return section_message("You watch nothing. Try `/gpu watch h100x8 --for 6h`.")
    return section_message("*Your watches*\n" + "\n".join(_line(ctx, w) for w in watches))


def on_unwatch(ctx: BotContext, cmd: grammar.Unwatch, command: dict, client) -> Message:
    """Stop a watch."""
    watch = unwatch(ctx.engine, cmd.watch_id, command["user_id"])
    return section_message(f"Stopped watch #{watch.id} ({gpu_name(watch.gpu, watch.count)}).")
