"""Admin use cases and report periods."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from gpubot.db import effects
from gpubot.domain.errors import Forbidden, NotFound
from gpubot.domain.model import Booking
from gpubot.domain.periods import period_bounds as bounds_of
from gpubot.scheduling.booking.booking import release
from gpubot.scheduling.booking.quotes import PAUSED_CACHE
from gpubot.scheduling.engine import Engine

__all__ = ["admin_release", "period_bounds", "require_admin", "set_budget", "set_provider_paused"]


def require_admin(engine: Engine, who: str) -> None:
    """Refuse `who` unless they are a team admin: the one place `/gpu admin …` is decided."""
    if not engine.is_admin(who):
        raise Forbidden("Only team admins can use `/gpu admin …`.")


def admin_release(engine: Engine, booking_id: int, who: str) -> Booking:
    """An admin releases anyone's booking (one that has not started is cancelled)."""
    require_admin(engine, who)
    return release(engine, booking_id, who)


def set_provider_paused(engine: Engine, provider: str, paused: bool, who: str) -> None:
    """Pause or resume a configured provider (admins only)."""
    require_admin(engine, who)
    if provider not in engine.providers:
        raise NotFound("There is no provider {provider}; configured: {configured}.", provider=repr(provider),
                       configured=", ".join(sorted(engine.providers)))
    with engine.db.session() as session:
        effects.set_paused(provider, paused, who, engine.now(), session=session)
    engine.memory.remembered.pop(PAUSED_CACHE, None)


def set_budget(engine: Engine, scope: str, amount: Decimal, who: str) -> None:
    """Set a monthly budget for `team`, `user:U…` or `project:NAME` (admins only)."""
    require_admin(engine, who)
    with engine.db.session() as session:
        effects.set_budget_override(scope, amount, who, engine.now(), session=session)


def period_bounds(engine: Engine, period: str) -> tuple[datetime, datetime]:
    """UTC bounds of a report period (`today`, `yesterday`, `week`, `last-week`, `month`, `last-month` or
    `YYYY-MM`) in the team time zone."""
    return bounds_of(period, engine.now(), engine.team_tz)
