"""Spend from the ledger, what every held booking still commits (the budget lines every check reads), and what
an offer would cost for a duration (quotes price with it, holds decide with it)."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.db import effects
from gpubot.db import held as held_repo
from gpubot.domain.budget import BudgetLine, month_bounds
from gpubot.domain.commitment import HELD_STATES, HeldCost, OwnerProject, price_held, scope_lines
from gpubot.domain.costing import CostItem
from gpubot.domain.model import Offer, UsageInterval
from gpubot.domain.pricing import interval_cost, quote_total, use_offset
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.ledger_costs import SpendTotals, spend_totals
from sqlmodel import Session

__all__ = ["budget_lines", "held_costs", "lines_of", "live_items", "offer_total", "spent_in", "stretch_cost"]


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


def offer_total(engine: Engine, offer: Offer, duration: timedelta) -> Decimal:
    """What holding `offer` for `duration` costs, in team currency, with its provider's tiers."""
    return quote_total(offer.price_per_gpu_hour, offer.count, duration, offer.currency, engine.currency,
                       engine.policy.fx, engine.tiers(offer.provider))


def held_costs(engine: Engine, now: datetime, *, session: Session, since: datetime | None = None,
               excluding: int | None = None) -> dict[OwnerProject, HeldCost]:
    """Live cost and remaining estimate of every held booking (but `excluding`), per (owner, project)."""
    tiered = [name for name in engine.policy.providers if engine.tiers(name)]
    held, summed = held_repo.held_for_budget(HELD_STATES, tiered, now, since, session=session, excluding=excluding)
    return price_held(held, now, engine.tiers, engine.to_team, since, summed)


def budget_lines(engine: Engine, owner: str, project: str | None, *, session: Session,
                 excluding: int | None = None, overrides: dict[str, Decimal] | None = None) -> list[BudgetLine]:
    """This month's team, user and project budgets that apply to a booking by `owner` in `project`, each with
    what it has committed (domain.commitment); `excluding` leaves one booking's own hold out; `overrides`, the
    budgets admins set, when the caller read them already (db.locks reads them with the budget locks)."""
    if overrides is None:
        overrides = effects.budget_overrides(session=session)
    scopes = list(_scopes(engine, owner, project, overrides))
    return lines_of(engine, scopes, engine.now(), session=session, excluding=excluding)


def lines_of(engine: Engine, scopes: list[tuple[str, str, Decimal]], now: datetime, *, session: Session,
             excluding: int | None = None) -> list[BudgetLine]:
    """The BudgetLine of each (scope, grouping, limit) this month: accrued + live spend, remaining estimates."""
    since, until, _label = month_bounds(now, engine.team_tz)
    # Held first: a stretch billed between the two reads is then counted twice (never past a budget), not missed.
    held = held_costs(engine, now, session=session, since=since, excluding=excluding)
    totals = spend_totals(engine, since, until, session=session)  # kept up to date, not re-summed per booking
    return scope_lines([(scope, limit, spent_in(totals, key, scope)) for scope, key, limit in scopes], held)


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



def live_items(engine: Engine, since: datetime, until: datetime, *, session: Session) -> list[CostItem]:
    """What running bookings have cost in [since, until) beyond their last accrual (the ledger lags by up to a
    reconcile period): one usage item each, at its own price with its provider's tiers."""
    now = min(engine.now(), until)
    items = []
    for held in held_repo.held_bookings(HELD_STATES, session=session):
        start = max(held.billed_until or held.started_at, held.started_at, since) if held.placed else now
        if now > start:
            seconds = int((now - start).total_seconds())
            native = interval_cost(held.price_per_gpu_hour, held.count, use_offset(held.started_at, start), seconds,
                                   engine.tiers(held.provider))
            currency = held.currency or engine.currency
            items.append(CostItem(held.id, held.owner, held.project, held.provider or "", held.gpu,
                                  seconds * held.count, engine.to_team(native, currency), native, currency))
    return items
