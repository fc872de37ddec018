"""Renderers of the notices about money: approvals, launch holds, budget crossings, the digest and its chart."""

from __future__ import annotations

from collections.abc import Callable

from gpubot.bot.digest import digest_mrkdwn
from gpubot.bot.i18n import Translator, duration_for, money_for, month_for
from gpubot.bot.refusals import passed_text
from gpubot.bot.rendered import Rendered, Upload, buttons, gpus, label, say
from gpubot.bot.views import actions_message, escape, section_message
from gpubot.domain import notices as n
from gpubot.domain.report_text import scope_name

__all__ = ["MONEY_RENDERERS"]


def _approval_needed(notice: n.ApprovalNeeded, tr: Translator) -> Rendered:
    text = tr.gettext("<@{owner}>'s {label} ({gpus} for {duration}) is over budget: {why}.").format(
        owner=escape(notice.owner), label=label(notice), gpus=gpus(notice),
        duration=duration_for(tr, notice.duration), why=_over(notice, tr))
    return Rendered(actions_message(text, buttons(notice, tr, str(notice.booking_id))))


def _approval_decided(notice: n.ApprovalDecided, tr: Translator) -> Rendered:
    said = tr.gettext("{label} was approved by <@{admin}>; acquiring now.") if notice.approved else \
        tr.gettext("{label} was denied by <@{admin}> (over budget).")
    line = tr.gettext("Approved by <@{admin}>.") if notice.approved else tr.gettext("Denied by <@{admin}>.")
    return Rendered(section_message(said.format(label=label(notice), admin=escape(notice.admin))),
                    line.format(admin=escape(notice.admin)))


def _launch_held(notice: n.LaunchHeld, tr: Translator) -> Rendered:
    why = _over(notice, tr)
    told = tr.gettext("{label} was not launched: budgets or prices changed since it was booked, and now {why}. So it "
                      "waits for an admin to approve it.") if notice.held else \
        tr.gettext("{label} was not launched: budgets or prices changed since it was booked, and now {why}. So it "
                   "is refused (over_budget = block); ask an admin to raise the budget or book it.")
    line = tr.gettext("Over budget at launch: {why}. Waiting for an admin.") if notice.held else \
        tr.gettext("Over budget at launch: {why}. Refused.")
    return Rendered(section_message(told.format(label=label(notice), why=why)), line.format(why=why))


def _over(notice: n.ApprovalNeeded | n.LaunchHeld, tr: Translator) -> str:
    """The budgets the booking would pass (a row owed before they were facts has them in English, `why`)."""
    return passed_text(notice.passed, notice.currency, tr) if notice.passed else escape(notice.why)


def _budget(notice: n.BudgetCrossed, tr: Translator) -> Rendered:
    values = {"scope": scope_name(escape(notice.scope), tr.gettext), "period": escape(month_for(tr, notice.period)),
              "percent": notice.percent,
              "reached": notice.reached, "spent": money_for(tr, notice.spent, notice.currency),
              "committed": money_for(tr, notice.committed, notice.currency),
              "limit": money_for(tr, notice.limit, notice.currency)}
    if notice.forecast is not None:
        return say(tr.gettext("📈 At this month's rate {scope} will spend {forecast} by the end of {period}, over its "
                               "{limit} budget ({reached} %).").format(
            forecast=money_for(tr, notice.forecast, notice.currency), **values))
    return say(tr.gettext("💸 Budget {scope} passed {percent} % in {period}: {spent} spent + {committed} committed "
                           "of {limit} ({reached} %).").format(**values))


def _digest(notice: n.DigestReady, tr: Translator) -> Rendered:
    return say(digest_mrkdwn(notice, tr))


def _chart(notice: n.DigestChart, tr: Translator) -> Rendered:
    from gpubot.scheduling.money.digest import digest_chart  # matplotlib is loaded only to draw a chart

    png = digest_chart(notice, tr.gettext, lambda amount, currency: money_for(tr, amount, currency))
    if png is None:  # no matplotlib here: nothing to share
        return Rendered(None)
    month, period = escape(month_for(tr, notice.month)), escape(notice.period)
    return Rendered(None, upload=Upload(
        f"spend-{notice.period}.png", png, tr.gettext("Spend {month}").format(month=month),
        tr.gettext("Daily spend in {month} against the budget (through {period}).").format(month=month,
                                                                                           period=period)))


MONEY_RENDERERS: dict[type, Callable[..., Rendered]] = {
    n.ApprovalNeeded: _approval_needed, n.ApprovalDecided: _approval_decided, n.LaunchHeld: _launch_held,
    n.BudgetCrossed: _budget, n.DigestReady: _digest, n.DigestChart: _chart,
}
