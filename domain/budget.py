"""Budget math: calendar-month periods in the team's time zone, usage share, and the over-budget decision."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from decimal import ROUND_HALF_UP, Decimal
from typing import NamedTuple

__all__ = ["BudgetLine", "Passed", "month_bounds", "over_budget_decision", "passed_budgets", "percent",
           "thresholds_crossed", "visible_to"]


@dataclass(frozen=True)
class BudgetLine:
    """One budget scope this month: its limit, what has accrued, and what active bookings will still cost."""

    scope: str
    limit: Decimal
    spent: Decimal
    committed: Decimal = Decimal(0)

    @property
    def projected(self) -> Decimal:
        """Accrued plus the remaining estimate of active bookings."""
        return self.spent + self.committed

    def percent_with(self, extra: Decimal = Decimal(0)) -> int:
        """Share of the limit used, in whole percent, after adding `extra`."""
        return percent(self.projected + extra, self.limit)


class Passed(NamedTuple):
    """A budget that an amount would pass: its scope, what it would reach, its limit."""

    scope: str
    reach: Decimal
    limit: Decimal


def passed_budgets(lines: list[BudgetLine], amount: Decimal) -> tuple[Passed, ...]:
    """The budgets that adding `amount` would pass, each with what it would reach."""
    return tuple(Passed(line.scope, line.projected + amount, line.limit) for line in lines
                 if line.limit > 0 and line.projected + amount > line.limit)


def percent(amount: Decimal, limit: Decimal) -> int:
    """`amount` as a whole percentage of `limit` (0 when there is no limit)."""
    if limit <= 0:
        return 0
    return int((amount * 100 / limit).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def month_bounds(now: datetime, tz: tzinfo) -> tuple[datetime, datetime, str]:
    """Start and end (UTC) of the calendar month containing `now` in `tz`, and its label `YYYY-MM`."""
    local = now.astimezone(tz)
    start = local.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = start.replace(year=start.year + (start.month == 12), month=start.month % 12 + 1)
    return start.astimezone(UTC), following.astimezone(UTC), f"{start.year:04d}-{start.month:02d}"


def thresholds_crossed(before_pct: int, after_pct: int, thresholds: list[int]) -> list[int]:
    """Thresholds passed when usage goes from `before_pct` to `after_pct`."""
    return [t for t in sorted(thresholds) if before_pct < t <= after_pct]


def over_budget_decision(lines: list[BudgetLine], estimate: Decimal, mode: str, is_admin: bool) -> str:
    """`ok`, `warn`, `approve` or `block` for a booking costing `estimate` against every applicable budget."""
    over = any(line.limit > 0 and line.projected + estimate > line.limit for line in lines)
    if not over:
        return "ok"
    return "warn" if is_admin else mode


def visible_to(scope: str, user: str, is_admin: bool) -> bool:
    """Whether `/gpu budget` shows `scope` to `user`: the team's, their own and every project's (any booking may
    name a project); another person's only to admins."""
    return is_admin or not scope.startswith("user:") or scope == f"user:{user}"
