"""Spend from the ledger: what has accrued, what active bookings are still committed to, budgets."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal

from sqlmodel import Session

from db import bookings as booking_repo
from db import effects
from db.bookings import Commitment
from domain.budget import BudgetLine, month_bounds
from domain.model import ACTIVE_STATES, UsageInterval
from domain.pricing import interval_cost, pooled_cost, use_offset
from scheduling.engine import Engine
from scheduling.ledger_costs import SpendTotals, spend_totals

__all__ = ["budget_lines", "committed_costs", "committed_in_scopes", "spent_in", "stretch_cost"]

_OwnerProject = tuple[str, str | None]


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


def committed_costs(engine: Engine, running: Iterable[Commitment], now: datetime) -> dict[_OwnerProject, Decimal]:
    """What running bookings will still cost from `now` to their ends, per (owner, project), in team currency.

    A budget check reads every running booking, so their remaining GPU-seconds are priced once per provider
    price (`pooled_cost`), not booking by booking.
    """
    stretches: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)
    for booking in running:
        if booking.price_per_gpu_hour is None or booking.ends_at is None:
            continue
        seconds = max(0, int((booking.ends_at - now).total_seconds()))
        key = (booking.owner, booking.project, booking.provider or "", booking.price_per_gpu_hour,
               booking.currency or "USD")
        stretches[key].append((booking.count, use_offset(booking.started_at, now), seconds))
    tiers: dict[str, list] = {}
    totals: dict[_OwnerProject, Decimal] = defaultdict(Decimal)
    for (owner, project, provider, price, currency), group in stretches.items():
        provider_tiers = tiers.setdefault(provider, engine.tiers(provider))
        totals[owner, project] += engine.to_team(pooled_cost(price, group, provider_tiers), currency)
    return totals


def budget_lines(engine: Engine, owner: str, project: str | None, *, session: Session) -> list[BudgetLine]:
    """This month's team, user and project budgets that apply to a booking by `owner` in `project`."""
    now = engine.now()
    since, until, _label = month_bounds(now, engine.team_tz)
    scopes = list(_scopes(engine, owner, project, effects.budget_overrides(session=session)))
    totals = spend_totals(engine, since, until, session=session)  # kept up to date, not re-summed per booking
    committed = committed_in_scopes(engine, scopes, now, session=session)
    return [BudgetLine(scope, limit, spent_in(totals, key, scope), committed[scope]) for scope, key, limit in scopes]


def committed_in_scopes(engine: Engine, scopes: list[tuple[str, str, Decimal]], now: datetime, *,
                        session: Session) -> dict[str, Decimal]:
    """What running bookings will still cost from `now`, per budget scope (`team`, `user:U1`, `project:p`)."""
    running = committed_costs(engine, booking_repo.commitments(ACTIVE_STATES, session=session), now)
    wanted = [(scope, key, scope.split(":", 1)[-1]) for scope, key, _limit in scopes]
    totals = {scope: Decimal(0) for scope, _key, _limit in scopes}
    for (owner, project), amount in running.items():
        group = {"team": "team", "user": owner, "project": project or "(none)"}  # as CostItem.key groups spend
        for scope, key, value in wanted:
            if group[key] == value:
                totals[scope] += amount
    return totals


def spent_in(totals: SpendTotals, key: str, scope: str) -> Decimal:
    """A scope's share of spend totals: `team`, or `user:U1` / `project:p` with key `user` / `project`."""
    name = scope.split(":", 1)[-1]
    if key == "team":
        return totals.team
    return (totals.users if key == "user" else totals.projects).get(name, Decimal(0))


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

