"""Replies to every /gpu subcommand, by command type. Each is: one engine call, one message."""

from __future__ import annotations

from collections.abc import Callable

from bot.booking_replies import on_book, on_prices, on_quote
from bot.context import BotContext
from bot.views import Message, extension_text, repeated_extension_text, section_message, status_lines
from bot.watch_replies import on_unwatch, on_watch, on_watches
from domain import grammar
from domain.budget import month_bounds, visible_to
from domain.durations import format_duration
from domain.errors import Forbidden, UserError
from domain.help import help_text
from domain.model import Booking, BookingState
from domain.money import format_money
from domain.report_text import budget_text, cost_table, waiting_text
from scheduling import admin, reports
from scheduling.booking import bookings_of, cancel, extend, release
from scheduling.lifecycle import billed_total
from scheduling.queue import queue_view

__all__ = ["HANDLERS", "user_error_text"]


def user_error_text(exc: UserError) -> str:
    """The one wording for a refused request."""
    return f"⚠️ {exc}"


def on_help(ctx: BotContext, cmd: grammar.Help, command: dict, client) -> Message:
    """Usage with examples."""
    return section_message(help_text(cmd.topic))


def on_status(ctx: BotContext, cmd: grammar.Status, command: dict, client) -> Message:
    """The caller's bookings (or everyone's)."""
    owner = None if cmd.everyone else command["user_id"]
    return section_message(status_lines(bookings_of(ctx.engine, owner), cmd.everyone))


def on_queue(ctx: BotContext, cmd: grammar.Queue, command: dict, client) -> Message:
    """The queue with positions and waiting times."""
    entries = queue_view(ctx.engine)
    if not entries:
        return section_message("The queue is empty.")
    now = ctx.engine.now()
    rows = [f"{e.position}. {e.booking.label} {e.booking.count}× {e.booking.gpu} for <@{e.booking.owner}> — "
            f"{waiting_text(e.booking, now)}" for e in entries]
    return section_message("*Queue*\n" + "\n".join(rows))


def cancelled_text(booking: Booking) -> str:
    """The one sentence that answers a cancel (or a release of a booking that had not started)."""
    return f"{booking.label} is cancelled; it had not started, so nothing was billed."


def released_text(booking: Booking, cost: str) -> str:
    """The one sentence that answers a release of a running booking."""
    if booking.state == BookingState.RELEASED:
        ran = format_duration((booking.released_at or booking.started_at) - booking.started_at) \
            if booking.started_at else "0s"
        return f"{booking.label} is released after {ran}; billing has stopped and it cost {cost}."
    return (f"{booking.label} is being released: the cloud has not confirmed the stop yet, so gpubot keeps trying "
            f"and billing ends when it does.")


def on_cancel(ctx: BotContext, cmd: grammar.Cancel, command: dict, client) -> Message:
    """Cancel a booking that has no instance yet (one still booting is released, and the reply says what it cost)."""
    return _stopped(ctx, cancel(ctx.engine, cmd.booking_id, command["user_id"]))


def on_release(ctx: BotContext, cmd: grammar.Release, command: dict, client) -> Message:
    """Release a running booking (a booking that has not started is cancelled, and its message says so)."""
    return _stopped(ctx, release(ctx.engine, cmd.booking_id, command["user_id"]))


def _stopped(ctx: BotContext, booking: Booking) -> Message:
    if booking.state == BookingState.CANCELLED:
        ctx.notifier.booking_updated(booking, "Cancelled.")
        return section_message(cancelled_text(booking))
    cost = format_money(billed_total(ctx.engine, booking), ctx.engine.currency)
    return section_message(released_text(booking, cost))


def on_extend(ctx: BotContext, cmd: grammar.Extend, command: dict, client) -> Message:
    """Extend a running booking, once per command (a retry or a replay of the same request acts once)."""
    user, trigger = command["user_id"], command.get("trigger_id")
    result = extend(ctx.engine, cmd.booking_id, user, cmd.duration,
                    request_key=f"cmd:extend:{trigger}:{user}" if trigger else None)
    if result.repeat:
        return section_message(repeated_extension_text(result.booking))
    text = extension_text(result.booking, result.extension, result.added_cost, result.over_budget,
                          ctx.engine.currency)
    ctx.notifier.booking_updated(result.booking, text)
    return section_message(text)


def on_cost(ctx: BotContext, cmd: grammar.Cost, command: dict, client) -> Message:
    """Spend, GPU-hours and idle waste over a period, grouped, with totals."""
    since, until = admin.period_bounds(ctx.engine, cmd.period)
    report = reports.cost_report(ctx.engine, since, until, cmd.by or "user")
    table = cost_table(report.rows, report.total, report.by, ctx.engine.currency)
    return section_message(f"*Spend, {cmd.period}, by {report.by}*\n```{table}```")


def on_budget(ctx: BotContext, cmd: grammar.Budget, command: dict, client) -> Message:
    """Each budget this month the caller may see: spent, committed, month-end forecast, thresholds crossed."""
    _since, _until, label = month_bounds(ctx.engine.now(), ctx.engine.team_tz)
    user = command["user_id"]
    rows = [budget_text(s.scope, s.limit, s.spent, s.committed, s.forecast, s.crossed, ctx.engine.currency)
            for s in reports.budget_statuses(ctx.engine)
            if visible_to(s.scope, user, ctx.engine.is_admin(user))]
    return section_message(f"*Budgets for {label}*\n" + "\n".join(rows))


def _require_admin(ctx: BotContext, user: str) -> None:
    if not ctx.engine.is_admin(user):
        raise Forbidden("Only team admins can use `/gpu admin …`.")


def on_admin_release(ctx: BotContext, cmd: grammar.AdminRelease, command: dict, client) -> Message:
    """Admin: release anyone's booking."""
    _require_admin(ctx, command["user_id"])
    return on_release(ctx, grammar.Release(cmd.booking_id), command, client)


def on_admin_provider(ctx: BotContext, cmd: grammar.AdminProvider, command: dict, client) -> Message:
    """Admin: pause or resume a provider."""
    _require_admin(ctx, command["user_id"])
    admin.set_provider_paused(ctx.engine, cmd.provider, cmd.action == "pause", command["user_id"])
    return section_message(f"Provider {cmd.provider} {'paused' if cmd.action == 'pause' else 'resumed'}.")


def on_admin_budget(ctx: BotContext, cmd: grammar.AdminBudgetSet, command: dict, client) -> Message:
    """Admin: set a monthly budget for a scope."""
    _require_admin(ctx, command["user_id"])
    admin.set_budget(ctx.engine, cmd.scope, cmd.amount, command["user_id"])
    return section_message(f"Budget for {cmd.scope} set to {format_money(cmd.amount, ctx.engine.currency)}.")


def on_modal(ctx: BotContext, cmd: grammar.OpenBookModal, command: dict, client) -> Message | None:
    """`/gpu book` alone: open the booking modal."""
    from bot.listeners.modal import open_book_modal

    open_book_modal(ctx, client, command["trigger_id"])
    return None


HANDLERS: dict[type, Callable] = {
    grammar.Help: on_help, grammar.Status: on_status, grammar.Queue: on_queue, grammar.Book: on_book,
    grammar.Quote: on_quote, grammar.Prices: on_prices, grammar.Cancel: on_cancel, grammar.Release: on_release,
    grammar.Extend: on_extend, grammar.Cost: on_cost, grammar.Budget: on_budget,
    grammar.AdminRelease: on_admin_release, grammar.AdminProvider: on_admin_provider,
    grammar.AdminBudgetSet: on_admin_budget, grammar.Watch: on_watch, grammar.Watches: on_watches,
    grammar.Unwatch: on_unwatch, grammar.OpenBookModal: on_modal,
}

