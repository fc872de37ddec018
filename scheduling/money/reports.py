"""Cost and budget reports, read from the ledger: `/gpu cost`, `/gpu budget`, `gpubot report cost`, the digest."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from gpubot.db import effects
from gpubot.db import reports as reports_db
from gpubot.domain.budget import BudgetLine, month_bounds
from gpubot.domain.costing import CostItem, GroupTotal, forecast_month, group_items
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.costs import budget_lines, lines_of, live_items
from gpubot.scheduling.money.ledger_costs import cost_items, waste_by_booking
from sqlmodel import Session

__all__ = ["BudgetStatus", "CostReport", "all_scopes", "budget_lines_for", "budget_statuses", "cost_report"]

GROUPINGS = ("user", "project", "provider", "gpu")


@dataclass(frozen=True)
class CostReport:
    """Spend, GPU-hours and idle waste in [since, until), grouped `by`, with the totals."""

    since: datetime
    until: datetime
    by: str
    rows: list[GroupTotal]
    total: GroupTotal
    items: list[CostItem]


@dataclass(frozen=True)
class BudgetStatus:
    """One budget this month: limit, accrued, committed by active bookings, month-end forecast, notices."""

    scope: str
    limit: Decimal
    spent: Decimal
    committed: Decimal
    forecast: Decimal
    crossed: list[int]

    @property
    def projected(self) -> Decimal:
        """Accrued plus what active bookings will still cost."""
        return self.spent + self.committed


def cost_report(engine: Engine, since: datetime, until: datetime, by: str) -> CostReport:
    """The cost report of a period: the ledger, plus what running bookings have cost since their last accrual."""
    with engine.db.session() as session:
        items = cost_items(engine, since, until, session=session) + live_items(engine, since, until, session=session)
        waste = waste_by_booking(engine, items, since, until, session=session)
    rows = group_items(items, by, waste)
    total = group_items(items, "team", waste) or [GroupTotal("team", Decimal(0), Decimal(0), Decimal(0),
                                                             Decimal(0))]
    return CostReport(since, until, by, rows, total[0], items)


def all_scopes(engine: Engine, *, session: Session) -> Iterator[tuple[str, str, Decimal]]:
    """(scope, grouping, limit) of every budget: the team, each user and each project with a budget."""
    overrides = effects.budget_overrides(session=session)
    budget = engine.policy.budget
    yield "team", "team", overrides.get("team", budget.monthly)
    for key, configured in (("user", budget.users), ("project", budget.projects)):
        names = set(configured) | {s.split(":", 1)[1] for s in overrides if s.startswith(key + ":")}
        for name in sorted(names):
            yield f"{key}:{name}", key, overrides.get(f"{key}:{name}", configured.get(name, Decimal(0)))


def budget_statuses(engine: Engine, now: datetime | None = None) -> list[BudgetStatus]:
    """Every budget of the current month (team time zone): what it has committed — accrued and live spend, the
    remaining estimate of held bookings (domain.commitment) — with the month-end forecast and notices."""
    now = now or engine.now()
    since, until, label = month_bounds(now, engine.team_tz)
    with engine.db.session() as session:
        notices = reports_db.notices_of(label, session=session)
        scopes = list(all_scopes(engine, session=session))
        lines = lines_of(engine, scopes, now, session=session)
    return [BudgetStatus(line.scope, line.limit, line.spent, line.committed,
                         forecast_month(line.spent, (since, until), now, line.committed),
                         notices.get(line.scope, [])) for line in lines]


def budget_lines_for(engine: Engine, owner: str, project: str | None = None) -> list[BudgetLine]:
    """This month's budgets that a booking by `owner` (in `project`) would count against."""
    with engine.db.session() as session:
        return budget_lines(engine, owner, project, session=session)
