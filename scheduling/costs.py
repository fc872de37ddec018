"""Spend from the ledger: what has accrued, what active bookings are still committed to, budgets."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from sqlmodel import Session

from db import bookings as booking_repo
from db import effects
from db.bookings import Commitment
from domain.budget import BudgetLine, month_bounds
from domain.model import ACTIVE_STATES, UsageInterval
from domain.pricing import interval_cost
from scheduling.engine import Engine
from scheduling.ledger_costs import SpendTotals, spend_totals

__all__ = ["budget_lines", "committed_cost", "stretch_cost"]


def stretch_cost(engine: Engine, interval: UsageInterval, started_at: datetime | None,
                 since: datetime | None = None, until: datetime | None = None) -> Decimal:
    """Team-currency cost of a billed stretch, clipped to [since, until), with the provider's tiers."""
    start = max(interval.start, since) if since else interval.start
    end = min(interval.end, until) if until else interval.end
    if end is None or end <= start:
        return Decimal(0)
    offset = int((start - (started_at or interval.start)).total_seconds())
    native = interval_cost(interval.price_per_gpu_hour, interval.count, max(offset, 0),
                           int((end - start).total_seconds()), engine.tiers(interval.provider))
    return engine.to_team(native, interval.currency)


def committed_cost(engine: Engine, booking: Commitment, now: datetime) -> Decimal:
    """What an active booking will still cost from `now` to its end (plus anything not yet billed)."""
    if booking.price_per_gpu_hour is None or booking.ends_at is None:
        return Decimal(0)
    start = booking.started_at or now
    seconds = max(0, int((booking.ends_at - now).total_seconds()))
    unbilled = UsageInterval(booking.id, booking.provider or "", booking.gpu, booking.count, now,
                             now + timedelta(seconds=seconds), booking.price_per_gpu_hour, booking.currency or "USD")
    return stretch_cost(engine, unbilled, start)


def budget_lines(engine: Engine, owner: str, project: str | None, *, session: Session) -> list[BudgetLine]:
    """This month's team, user and project budgets that apply to a booking by `owner` in `project`."""
    now = engine.now()
    since, until, _label = month_bounds(now, engine.team_tz)
    scopes = list(_scopes(engine, owner, project, effects.budget_overrides(session=session)))
    totals = spend_totals(engine, since, until, session=session)  # kept up to date, not re-summed per booking
    running = booking_repo.commitments(ACTIVE_STATES, session=session)
    committed = _sum_in_scopes(scopes, ((b.owner, b.project or "(none)", committed_cost(engine, b, now))
                                        for b in running))
    return [BudgetLine(scope, limit, _spent(totals, key, scope), committed[scope]) for scope, key, limit in scopes]


def _spent(totals: SpendTotals, key: str, scope: str) -> Decimal:
    name = scope.split(":", 1)[-1]
    if key == "team":
        return totals.team
    return (totals.users if key == "user" else totals.projects).get(name, Decimal(0))


def _sum_in_scopes(scopes: list[tuple[str, str, Decimal]], amounts) -> dict[str, Decimal]:
    """Totals of (owner, project, amount) triples per budget scope (`team`, `user:U1`, `project:p`)."""
    totals = {scope: Decimal(0) for scope, _key, _limit in scopes}
    wanted = [(scope, key, scope.split(":", 1)[-1]) for scope, key, _limit in scopes]
    for owner, project, amount in amounts:
        for scope, key, value in wanted:
            if key == "team" or (key == "user" and owner == value) or (key == "project" and project == value):
                totals[scope] += amount
    return totals


def _scopes(engine: Engine, owner: str, project: str | None, overrides: dict[str, Decimal]):
    budget = engine.policy.budget
    yield "team", "team", overrides.get("team", budget.monthly)
    user_limit = overrides.get(f"user:{owner}", budget.users.get(owner))
    if user_limit is not None:
        yield f"user:{owner}", "user", user_limit
    if project:
        project_limit = overrides.get(f"project:{project}", budget.projects.get(project))
        if project_limit is not None:
            yield f"project:{project}", "project", project_limit

