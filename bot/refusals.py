"""Refusals the engine gives as facts (domain.errors.OverBudget, NothingSells), and the budgets a booking would
pass, worded in the reader's language."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from decimal import ROUND_CEILING, Decimal

from gpubot.bot.i18n import N_, Translator, duration_for, money_for, sentences
from gpubot.domain.errors import NothingSells, OverBudget, UserError
from gpubot.domain.probe_failures import read_failure
from gpubot.domain.report_text import scope_name

__all__ = ["failure_text", "passed_text", "refusal_text"]


def passed_text(passed: Iterable[tuple[str, Decimal, Decimal]], currency: str, tr: Translator) -> str:
    """`team would reach $36.00 of $20.00; user:U1 would reach …` for each budget passed (scope, reach, limit)."""
    return tr.gettext("; ").join(tr.gettext("{scope} would reach {reach} of {limit}").format(
        scope=scope_name(_inert(scope), tr.gettext), reach=money_for(tr, reach, currency),
        limit=money_for(tr, limit, currency))
        for scope, reach, limit in passed)


def refusal_text(exc: UserError, tr: Translator) -> str | None:
    """The refusal worded from its facts, or None when `exc` is not one the engine gives as facts."""
    if isinstance(exc, OverBudget):
        return _over_budget(exc, tr)
    if isinstance(exc, NothingSells):
        return _nothing_sells(exc, tr)
    return None


def _over_budget(exc: OverBudget, tr: Translator) -> str:
    values = {"cost": money_for(tr, exc.estimate, exc.currency), "over": passed_text(exc.passed, exc.currency, tr)}
    if exc.extending:
        return tr.gettext("Extending {label} would cost {cost} more, and {over}; so it is refused (over_budget = "
                          "{mode}). An admin can extend it.").format(label=exc.extending, mode=exc.mode, **values)
    return tr.gettext("Over budget, so this booking (≈ {cost}) is refused: {over}, counting what is spent, running "
                      "and already booked (scheduled, queued or waiting). Ask an admin to raise the budget.").format(
        **values)


def _over_the_cap(exc: NothingSells, tr: Translator) -> str:
    return tr.gettext("No configured cloud offers {count}× {name} at {cap} per GPU-hour or less; the cheapest is "
                      "{cheapest} on {where}. Book with `--max-price {raise_to}` or more, or without "
                      "`--max-price`.").format(
        count=exc.count, name=_inert(exc.display), cap=money_for(tr, exc.max_price or Decimal(0), exc.currency),
        cheapest=money_for(tr, exc.cheapest or Decimal(0), exc.currency), where=_inert(exc.cheapest_at),
        raise_to=_plain(exc.cheapest or Decimal(0)))


def _plain(amount: Decimal) -> str:
    """A price as `--max-price` takes it, rounded up to the cent so that it admits the offer: `2.42`, `3`."""
    return f"{amount.quantize(Decimal('0.01'), rounding=ROUND_CEILING).normalize():f}"


def _nothing_sells(exc: NothingSells, tr: Translator) -> str:
    if exc.cheapest is not None:
        return _over_the_cap(exc, tr)
    values = {"gpu": exc.gpu, "count": exc.count, "name": _inert(exc.display), "largest": exc.largest}
    if exc.largest:
        if exc.filtered:
            return tr.gettext("No configured cloud sells more than {largest}× {name} in one machine with those "
                              "filters; book `{gpu}x{largest}`, or split the work over several bookings.").format(
                **values)
        return tr.gettext("No configured cloud sells more than {largest}× {name} in one machine; book "
                          "`{gpu}x{largest}`, or split the work over several bookings.").format(**values)
    text = tr.gettext("No configured cloud offers {count}× {name} with those filters.").format(**values) \
        if exc.filtered else tr.gettext("No configured cloud offers {count}× {name}.").format(**values)
    if exc.failures:
        text = sentences(text, tr.gettext("({failures})").format(failures=tr.gettext("; ").join(
            failure_text(provider, why, tr) for provider, why in exc.failures)))
    return sentences(text, tr.gettext("Try `/gpu prices` to see what can be booked."))


_KIND = {"no_capacity": N_("no capacity"), "no_access": N_("no access to this offer"),
         "quota": N_("quota exceeded"), "auth": N_("credentials refused"), "rate_limited": N_("rate limited"),
         "invalid": N_("request refused as invalid"), "transient": N_("temporarily unavailable"),
         "error": N_("failed")}


def failure_text(provider: str, why: str, tr: Translator) -> str:
    """`lambda: no answer within 5s`, `lambda：5 秒内无应答`: why a provider gave no offers, its kind in the
    reader's language and the provider's own words (never translated) marked as its words."""
    failure = read_failure(why)
    if failure.kind == "no_answer":
        reason = tr.gettext("no answer within {duration}").format(
            duration=duration_for(tr, timedelta(seconds=failure.seconds)))
    elif failure.kind == "internal":
        reason = tr.gettext("failed on our side (`{error}`)").format(error=_inert(failure.detail))
    elif failure.kind in _KIND and failure.detail:
        reason = tr.gettext("{kind}, saying “{words}”").format(kind=tr.gettext(_KIND[failure.kind]),
                                                                words=_inert(failure.detail))
    elif failure.kind in _KIND:
        reason = tr.gettext(_KIND[failure.kind])
    else:
        reason = tr.gettext("said “{words}”").format(words=_inert(failure.detail))
    return tr.gettext("{provider}: {reason}").format(provider=_inert(provider), reason=reason)


def _inert(text: str) -> str:
    """Text from outside (a vendor, a budget's scope) with Slack's control characters escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
