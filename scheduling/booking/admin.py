"""Admin use cases and report periods."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from gpubot.db import effects
from gpubot.domain.errors import NotFound
from gpubot.domain.periods import period_bounds as bounds_of
from gpubot.scheduling.booking.quotes import PAUSED_CACHE
from gpubot.scheduling.engine import Engine

__all__ = ["period_bounds", "set_budget", "set_provider_paused"]


def set_provider_paused(engine: Engine, provider: str, paused: bool, who: str) -> None:
    """Pause or resume a configured provider."""
    if provider not in engine.providers:
        raise NotFound("There is no provider {provider}; configured: {configured}.", provider=repr(provider),
                       configured=", ".join(sorted(engine.providers)))
    with engine.db.session() as session:
        effects.set_paused(provider, paused, who, engine.now(), session=session)
    engine.memory.remembered.pop(PAUSED_CACHE, None)


def set_budget(engine: Engine, scope: str, amount: Decimal, who: str) -> None:
    """Set a monthly budget for `team`, `user:U…` or `project:NAME`."""
    with engine.db.session() as session:
        effects.set_budget_override(scope, amount, who, engine.now(), session=session)


def period_bounds(engine: Engine, period: str) -> tuple[datetime, datetime]:
    """UTC bounds of a report period (`today`, `yesterday`, `week`, `last-week`, `month`, `last-month` or
    `YYYY-MM`) in the team time zone."""
    return bounds_of(period, engine.now(), engine.team_tz)
