"""Replies to every /gpu subcommand, by command type. Each is: one engine call, one message."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import partial

from gpubot.bot.booking_replies import on_book, on_prices, on_quote
from gpubot.bot.context import BotContext
from gpubot.bot.i18n import ENGLISH, N_, Translator, duration_for, locale_of, money_for, month_for
from gpubot.bot.language_replies import on_lang
from gpubot.bot.refusals import refusal_text
from gpubot.bot.times import moment_for
from gpubot.bot.views import (
    Message,
    extension_text,
    repeated_extension_text,
    section_message,
    state_name,
    status_lines,
)
from gpubot.bot.watch_replies import on_unwatch, on_watch, on_watches
from gpubot.domain import grammar
from gpubot.domain.budget import month_bounds, visible_to
from gpubot.domain.errors import NotYours, ParseError, UserError
from gpubot.domain.help import help_text
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.report_text import budget_text, cost_table, group_name, waiting_text
from gpubot.scheduling.acquisition.queue import queue_view
from gpubot.scheduling.booking import admin
from gpubot.scheduling.booking.booking import bookings_of, cancel, extend, release
from gpubot.scheduling.money import reports
from gpubot.scheduling.money.billing import billed_total

__all__ = ["HANDLERS", "user_error_text"]


def user_error_text(exc: UserError, tr: Translator = ENGLISH) -> str:
    """The one wording for a refused request, in the reader's language when the catalog has the domain's text."""
    return f"⚠️ {translated_error(exc, tr)}"


def translated_error(exc: UserError, tr: Translator) -> str:
    """The error's message: its English template (the msgid) translated, then filled with its values; a parse
    error also says the right form (and the closest word) in the reader's language."""
    if (worded := refusal_text(exc, tr)) is not None:
        return worded
    try:
        if isinstance(exc, ParseError) and exc.what and exc.how:
            params = _in_words(exc.what_params, tr)
            what = tr.gettext(exc.what).format(**params) if params else tr.gettext(exc.what)
            if exc.suggestion:
                return tr.gettext("{what} – did you mean `{suggestion}`? Write it like `{how}`.").format(
                    what=what, suggestion=exc.suggestion, how=exc.how)
            return tr.gettext("{what}. Write it like `{how}`.").format(what=what, how=exc.how)
        return tr.gettext(exc.template).format(**_in_words(_shown(exc), tr)) if exc.params else \
            tr.gettext(exc.template)
    except (KeyError, IndexError, ValueError):  # a translation naming a value the error lacks: say it in English
        return str(exc)


_WATCH_STATE = {"active": N_("still watching"), "fired": N_("fired"), "cancelled": N_("cancelled"),
                "expired": N_("expired")}


def _in_words(params: dict[str, object], tr: Translator) -> dict[str, object]:
    """A refusal's values for the reader: a duration in their units (`3 天`), a state by its name (`已取消`)."""
    return {k: duration_for(tr, v) if isinstance(v, timedelta) else
            _state_word(v, "watch" in params, tr) if k == "state" and isinstance(v, str) else v
            for k, v in params.items()}


def _state_word(value: str, of_watch: bool, tr: Translator) -> str:
    """A booking's or a watch's state as the reader names it (`awaiting approval`, `已取消`)."""
    if of_watch and value in _WATCH_STATE:
        return tr.gettext(_WATCH_STATE[value])
    states = {state.value: state for state in BookingState}
    return state_name(states[value], tr) if value in states else value


def _shown(exc: UserError) -> dict[str, object]:
    """The error's values as the reply shows them: the person something belongs to as a mention."""
    return {**exc.params, "owner": f"<@{exc.owner}>"} if isinstance(exc, NotYours) else exc.params


def on_help(ctx: BotContext, cmd: grammar.Help, command: dict, client) -> Message:
    """Usage with examples."""
    tr = ctx.tr_for(command["user_id"])
    return section_message(help_text(cmd.topic, tr.gettext), tr)


def on_status(ctx: BotContext, cmd: grammar.Status, command: dict, client) -> Message:
    """The caller's bookings (or everyone's)."""
    tr = ctx.tr_for(command["user_id"])
    owner = None if cmd.everyone else command["user_id"]
    return section_message(status_lines(bookings_of(ctx.engine, owner), cmd.everyone, tr,
                                        ctx.engine.policy.health.replace_grace), tr)


def on_queue(ctx: BotContext, cmd: grammar.Queue, command: dict, client) -> Message:
    """The queue with positions and waiting times."""
    tr = ctx.tr_for(command["user_id"])
    entries = queue_view(ctx.engine)
    if not entries:
        return section_message(tr.gettext("The queue is empty."), tr)
    now, clock = ctx.engine.now(), partial(moment_for, tr)
    rows = [tr.gettext("{position}. {label} {count}× {gpu} for <@{owner}> — {waiting}").format(
                position=e.position, label=e.booking.label, count=e.booking.count, gpu=e.booking.gpu,
                owner=e.booking.owner, waiting=waiting_text(e.booking, now, tr.gettext, clock)) for e in entries]
    return section_message("*" + tr.gettext("Queue") + "*\n" + "\n".join(rows), tr)


def cancelled_text(booking: Booking, tr: Translator = ENGLISH) -> str:
    """The one sentence that answers a cancel (or a release of a booking that had not started)."""
    return tr.gettext("{label} is cancelled; it had not started, so nothing was billed.").format(label=booking.label)


def released_text(booking: Booking, cost: str, tr: Translator = ENGLISH) -> str:
    """The one sentence that answers a release of a running booking."""
    if booking.state == BookingState.RELEASED:
        ran = duration_for(tr, (booking.released_at or booking.started_at) - booking.started_at) \
            if booking.started_at else "0s"
        return tr.gettext("{label} is released after {ran}; billing has stopped and it cost {cost}.").format(
            label=booking.label, ran=ran, cost=cost)
    return tr.gettext("{label} is being released: the cloud has not confirmed the stop yet, so gpubot keeps "
                      "trying and billing ends when it does.").format(label=booking.label)


def on_cancel(ctx: BotContext, cmd: grammar.Cancel, command: dict, client) -> Message:
    """Cancel a booking that has no instance yet (one still booting is released, and the reply says what it cost)."""
    return _stopped(ctx, cancel(ctx.engine, cmd.booking_id, command["user_id"]), ctx.tr_for(command["user_id"]))


def on_release(ctx: BotContext, cmd: grammar.Release, command: dict, client) -> Message:
    """Release a running booking (a booking that has not started is cancelled, and its message says so)."""
    return _stopped(ctx, release(ctx.engine, cmd.booking_id, command["user_id"]), ctx.tr_for(command["user_id"]))


def _stopped(ctx: BotContext, booking: Booking, tr: Translator) -> Message:
    if booking.state == BookingState.CANCELLED:
        return section_message(cancelled_text(booking, tr), tr)
    cost = money_for(tr, billed_total(ctx.engine, booking), ctx.engine.currency)
    return section_message(released_text(booking, cost, tr), tr)


def on_extend(ctx: BotContext, cmd: grammar.Extend, command: dict, client) -> Message:
    """Extend a running booking, once per command (a retry or a replay of the same request acts once)."""
    user, trigger = command["user_id"], command.get("trigger_id")
    tr = ctx.tr_for(user)
    result = extend(ctx.engine, cmd.booking_id, user, cmd.duration,
                    request_key=f"cmd:extend:{trigger}:{user}" if trigger else None)
    if result.repeat:
        return section_message(repeated_extension_text(result.booking, tr), tr)
    text = extension_text(result.booking, result.extension, result.added_cost, result.over_budget,
                          ctx.engine.currency, tr)
    return section_message(text, tr)


def on_cost(ctx: BotContext, cmd: grammar.Cost, command: dict, client) -> Message:
    """Spend, GPU-hours and idle waste over a period, grouped, with totals."""
    tr = ctx.tr_for(command["user_id"])
    since, until = admin.period_bounds(ctx.engine, cmd.period)
    report = reports.cost_report(ctx.engine, since, until, cmd.by or "user")
    table = cost_table(report.rows, report.total, report.by, ctx.engine.currency, tr.gettext, locale_of(tr))
    head = tr.gettext("Spend, {period}, by {group}").format(period=period_name(cmd.period, tr),
                                                            group=group_name(report.by, tr.gettext))
    return section_message(f"*{head}*\n```{table}```", tr)


_PERIODS = {"today": N_("today"), "yesterday": N_("yesterday"), "week": N_("week"),
            "last-week": N_("last week"), "month": N_("month"), "last-month": N_("last month")}


def period_name(period: str, tr: Translator) -> str:
    """A report period in the reader's words (`month` → 本月); a month (`2026-11`) as written."""
    return tr.gettext(_PERIODS[period]) if period in _PERIODS else period


def on_budget(ctx: BotContext, cmd: grammar.Budget, command: dict, client) -> Message:
    """Each budget this month the caller may see: spent, committed, month-end forecast, thresholds crossed."""
    _since, _until, label = month_bounds(ctx.engine.now(), ctx.engine.team_tz)
    user = command["user_id"]
    tr = ctx.tr_for(user)
    rows = [budget_text(s.scope, s.limit, s.spent, s.committed, s.forecast, s.crossed, ctx.engine.currency,
                        tr.gettext, locale_of(tr))
            for s in reports.budget_statuses(ctx.engine)
            if visible_to(s.scope, user, ctx.engine.is_admin(user))]
    head = tr.gettext("Budgets for {month}").format(month=month_for(tr, label))
    return section_message(f"*{head}*\n" + "\n".join(rows), tr)


def on_admin_release(ctx: BotContext, cmd: grammar.AdminRelease, command: dict, client) -> Message:
    """Admin: release anyone's booking (the engine checks the caller is an admin)."""
    user = command["user_id"]
    return _stopped(ctx, admin.admin_release(ctx.engine, cmd.booking_id, user), ctx.tr_for(user))


def on_admin_provider(ctx: BotContext, cmd: grammar.AdminProvider, command: dict, client) -> Message:
    """Admin: pause or resume a provider."""
    tr = ctx.tr_for(command["user_id"])
    paused = cmd.action == "pause"
    admin.set_provider_paused(ctx.engine, cmd.provider, paused, command["user_id"])
    text = tr.gettext("Provider {provider} paused.") if paused else tr.gettext("Provider {provider} resumed.")
    return section_message(text.format(provider=cmd.provider), tr)


def on_admin_budget(ctx: BotContext, cmd: grammar.AdminBudgetSet, command: dict, client) -> Message:
    """Admin: set a monthly budget for a scope."""
    tr = ctx.tr_for(command["user_id"])
    admin.set_budget(ctx.engine, cmd.scope, cmd.amount, command["user_id"])
    return section_message(tr.gettext("Budget for {scope} set to {amount}.").format(
        scope=cmd.scope, amount=money_for(tr, cmd.amount, ctx.engine.currency)), tr)


HANDLERS: dict[type, Callable] = {
    grammar.Help: on_help, grammar.Status: on_status, grammar.Queue: on_queue, grammar.Book: on_book,
    grammar.Quote: on_quote, grammar.Prices: on_prices, grammar.Cancel: on_cancel, grammar.Release: on_release,
    grammar.Extend: on_extend, grammar.Cost: on_cost, grammar.Budget: on_budget,
    grammar.AdminRelease: on_admin_release, grammar.AdminProvider: on_admin_provider,
    grammar.AdminBudgetSet: on_admin_budget, grammar.Watch: on_watch, grammar.Watches: on_watches,
    grammar.Unwatch: on_unwatch, grammar.Lang: on_lang,
}

