"""Budget thresholds and the month-end forecast: each crossing is announced once per threshold, month and
scope — the claim is a row in budget_notifications (unique), so restarts and replicas never repeat one."""

from __future__ import annotations

import logging
from datetime import timedelta

from gpubot.db import reports as reports_db
from gpubot.domain.budget import month_bounds, percent
from gpubot.domain.money import format_money
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.reports import BudgetStatus, budget_statuses

__all__ = ["FORECAST_AFTER", "check_budgets"]

log = logging.getLogger(__name__)

FORECAST_AFTER = timedelta(days=1)  # a forecast from the first hours of a month is noise


def check_budgets(engine: Engine) -> list[str]:
    """Announce every newly crossed threshold (and an over-budget forecast); returns what was announced."""
    now = engine.now()
    month_start, _end, label = month_bounds(now, engine.team_tz)
    announced = []
    for status in budget_statuses(engine, now):
        if status.limit <= 0:
            continue
        crossed = [t for t in sorted(engine.policy.budget.thresholds) if status.projected * 100 >= status.limit * t]
        fresh = [t for t in crossed if _claim(engine, status.scope, label, t)]
        if fresh:
            announced.append(_announce(engine, status, label, fresh[-1]))
        if _forecast_due(engine, status, now - month_start) and _claim(engine, f"forecast:{status.scope}", label,
                                                                         100):
            announced.append(_announce_forecast(engine, status, label))
    return announced


def _forecast_due(engine: Engine, status: BudgetStatus, elapsed: timedelta) -> bool:
    return engine.policy.budget.forecast_alert and elapsed >= FORECAST_AFTER and status.forecast > status.limit


def _claim(engine: Engine, scope: str, period: str, threshold: int) -> bool:
    with engine.db.session() as session:
        return reports_db.claim_budget_notice(scope, period, threshold, engine.now(), session=session)


def _announce(engine: Engine, status: BudgetStatus, label: str, threshold: int) -> str:
    money = lambda amount: format_money(amount, engine.currency)  # noqa: E731
    text = (f"💸 Budget {status.scope} passed {threshold} % in {label}: {money(status.spent)} spent + "
            f"{money(status.committed)} committed of {money(status.limit)} "
            f"({percent(status.projected, status.limit)} %).")
    _send(engine, status.scope, text, f"budget:{status.scope}:{label}:{threshold}")
    return text


def _announce_forecast(engine: Engine, status: BudgetStatus, label: str) -> str:
    money = lambda amount: format_money(amount, engine.currency)  # noqa: E731
    text = (f"📈 At this month's rate {status.scope} will spend {money(status.forecast)} by the end of {label}, "
            f"over its {money(status.limit)} budget ({percent(status.forecast, status.limit)} %).")
    _send(engine, status.scope, text, f"budget-forecast:{status.scope}:{label}")
    return text


def _send(engine: Engine, scope: str, text: str, key: str) -> None:
    channel = engine.policy.team.digest_channel
    if channel:
        engine.notifier.post(channel, text, key=key)
    for user in _owners(engine, scope):
        engine.notifier.direct(user, text, key=f"{key}:{user}")
    log.info("budget notice: %s", text)


def _owners(engine: Engine, scope: str) -> list[str]:
    """Who owns a budget: the user for `user:U`, the admins for the team and projects."""
    return [scope.split(":", 1)[1]] if scope.startswith("user:") else list(engine.policy.team.admins)
