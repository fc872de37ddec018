"""Spend from the ledger: what has accrued, what active bookings are still committed to, budgets."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from decimal import Decimal

from sqlmodel import Session

from db import bookings as booking_repo
from db import effects
from domain.budget import BudgetLine, month_bounds
from domain.model import ACTIVE_STATES, Booking, UsageInterval
from domain.pricing import interval_cost
from scheduling.engine import Engine
from scheduling.ledger_costs import cost_items

__all__ = ["budget_lines", "committed_cost", "spend_by", "stretch_cost"]


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


def committed_cost(engine: Engine, booking: Booking, now: datetime) -> Decimal:
    """What an active booking will still cost from `now` to its end (plus anything not yet billed)."""
    if booking.state not in ACTIVE_STATES or booking.price_per_gpu_hour is None or booking.ends_at is None:
        return Decimal(0)
    start = booking.started_at or now
    seconds = max(0, int((booking.ends_at - now).total_seconds()))
    unbilled = UsageInterval(booking.id, booking.provider or "", booking.gpu, booking.count, now,
                             now + timedelta(seconds=seconds), booking.price_per_gpu_hour, booking.currency or "USD")
    return stretch_cost(engine, unbilled, start)


def spend_by(engine: Engine, since: datetime, until: datetime, key: str, *, session: Session
             ) -> dict[str, Decimal]:
    """Accrued spend in [since, until) grouped by `user`, `project`, `provider`, `gpu` or `team`
    (usage with tiers, plus the shares of pool machines' monthly fees)."""
    totals: dict[str, Decimal] = defaultdict(Decimal)
    for item in cost_items(engine, since, until, session=session):
        totals[item.key(key)] += item.amount
    return dict(totals)


def budget_lines(engine: Engine, owner: str, project: str | None, *, session: Session) -> list[BudgetLine]:
    """This month's team, user and project budgets that apply to a booking by `owner` in `project`."""
    now = engine.now()
    since, until, _label = month_bounds(now, engine.team_tz)
    overrides = effects.budget_overrides(session=session)
    active = booking_repo.list_bookings(session=session, states=ACTIVE_STATES)
    lines = []
    for scope, key, limit in _scopes(engine, owner, project, overrides):
        spent = spend_by(engine, since, until, key, session=session).get(scope.split(":", 1)[-1], Decimal(0))
        committed = sum((committed_cost(engine, b, now) for b in active if _in_scope(b, key, scope)), Decimal(0))
        lines.append(BudgetLine(scope, limit, spent, committed))
    return lines


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


def _in_scope(booking: Booking, key: str, scope: str) -> bool:
    value = scope.split(":", 1)[-1]
    return key == "team" or (key == "user" and booking.owner == value) or (
        key == "project" and booking.project == value)
