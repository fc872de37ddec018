"""Once-only effects, operator switches and budget overrides."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from gpubot.db.core import execute
from gpubot.db.tables.billing import BudgetOverrideRow
from gpubot.db.tables.delivery import EffectRow
from gpubot.db.tables.operations import ProviderStateRow
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

__all__ = ["budget_overrides", "claim_effect", "is_claimed", "paused_providers", "set_budget_override", "set_paused"]


def claim_effect(key: str, now: datetime, *, session: Session) -> bool:
    """Claim the right to perform the effect `key`; True for the first claimant only, ever."""
    try:
        with session.begin_nested():
            session.add(EffectRow(key=key, created_at=now))
    except IntegrityError:
        return False
    return True


def is_claimed(key: str, *, session: Session) -> bool:
    """Whether the effect `key` was claimed already."""
    return session.get(EffectRow, key) is not None


def paused_providers(*, session: Session) -> set[str]:
    """Names of providers an admin has paused."""
    return {row.name for row in session.exec(select(ProviderStateRow).where(ProviderStateRow.paused))}


def set_paused(name: str, paused: bool, who: str, now: datetime, *, session: Session) -> None:
    """Pause or resume a provider."""
    row = session.get(ProviderStateRow, name) or ProviderStateRow(name=name)
    row.paused, row.updated_by, row.updated_at = paused, who, now
    session.add(row)


_OVERRIDES = select(BudgetOverrideRow.__table__.c.scope, BudgetOverrideRow.__table__.c.amount)  # every booking


def budget_overrides(*, session: Session) -> dict[str, Decimal]:
    """Budgets set by admins, by scope."""
    rows = execute(session, _OVERRIDES)
    return {scope: Decimal(amount) for scope, amount in rows}


def set_budget_override(scope: str, amount: Decimal, who: str, now: datetime, *, session: Session) -> None:
    """Set a budget for a scope from Slack."""
    row = session.get(BudgetOverrideRow, scope) or BudgetOverrideRow(scope=scope, amount=amount, set_by=who,
                                                                     set_at=now)
    row.amount, row.set_by, row.set_at = amount, who, now
    session.add(row)
