"""Budget thresholds and the month-end forecast: each crossing is told once per threshold, month and scope — the
claim is a row in budget_notifications (unique), written in the transaction that tells it, so restarts and
replicas never repeat one."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta

from gpubot.db import reports as reports_db
from gpubot.domain.budget import month_bounds, percent
from gpubot.domain.notices import BudgetCrossed
from gpubot.scheduling.delivery import tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.reports import BudgetStatus, budget_statuses
from sqlmodel import Session

__all__ = ["FORECAST_AFTER", "check_budgets"]

log = logging.getLogger(__name__)

FORECAST_AFTER = timedelta(days=1)  # a forecast from the first hours of a month is noise


def check_budgets(engine: Engine) -> list[BudgetCrossed]:
    """Tell every newly crossed threshold (and an over-budget forecast); returns the notices told, one per
    reader."""
    now = engine.now()
    month_start, _end, label = month_bounds(now, engine.team_tz)
    told: list[BudgetCrossed] = []
    for status in budget_statuses(engine, now):
        if status.limit <= 0:
            continue
        crossed = [t for t in sorted(engine.policy.budget.thresholds) if status.projected * 100 >= status.limit * t]
        with engine.db.session() as session:
            fresh = [t for t in crossed if _claim(engine, status.scope, label, t, session)]
            if fresh:
                told += _tell(engine, _crossing(engine, status, label, fresh[-1]), session)
            if _forecast_due(engine, status, now - month_start) and _claim(
                    engine, f"forecast:{status.scope}", label, 100, session):
                told += _tell(engine, _forecast(engine, status, label), session)
    return told


def _forecast_due(engine: Engine, status: BudgetStatus, elapsed: timedelta) -> bool:
    return engine.policy.budget.forecast_alert and elapsed >= FORECAST_AFTER and status.forecast > status.limit


def _claim(engine: Engine, scope: str, period: str, threshold: int, session: Session) -> bool:
    return reports_db.claim_budget_notice(scope, period, threshold, engine.now(), session=session)


def _crossing(engine: Engine, status: BudgetStatus, label: str, threshold: int) -> BudgetCrossed:
    return BudgetCrossed(to="", scope=status.scope, percent=threshold, spent=status.spent, limit=status.limit,
                         currency=engine.currency, period=label, committed=status.committed,
                         reached=percent(status.projected, status.limit))


def _forecast(engine: Engine, status: BudgetStatus, label: str) -> BudgetCrossed:
    return BudgetCrossed(to="", scope=status.scope, percent=100, spent=status.spent, limit=status.limit,
                         currency=engine.currency, period=label, committed=status.committed,
                         reached=percent(status.forecast, status.limit), forecast=status.forecast)


def _tell(engine: Engine, crossing: BudgetCrossed, session: Session) -> list[BudgetCrossed]:
    """Tell the digest channel (when there is one) and the budget's owners."""
    readers = [r for r in (engine.policy.team.digest_channel, *_owners(engine, crossing.scope)) if r]
    notices = [replace(crossing, to=reader) for reader in dict.fromkeys(readers)]
    for notice in notices:
        tell(engine, notice, session=session)
    log.info("budget notice: %s passed %s %% of its limit in %s", crossing.scope, crossing.reached, crossing.period)
    return notices


def _owners(engine: Engine, scope: str) -> list[str]:
    """Who owns a budget: the user for `user:U`, the admins for the team and projects."""
    return [scope.split(":", 1)[1]] if scope.startswith("user:") else list(engine.policy.team.admins)
