"""An extension of a running booking, apart from its decision (booking.extend, under the budget locks): what it
costs at the booking's own price, which budgets it passes (refused unless they may be passed), and the provider's
own hold on the machine pushed out with it (a Slurm job's TimeLimit)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from gpubot.domain.budget import BudgetLine, Passed, over_budget_decision, passed_budgets
from gpubot.domain.durations import format_duration
from gpubot.domain.errors import OverBudget, PastTimeLimit, ProviderError, Refused
from gpubot.domain.extension import Extension
from gpubot.domain.model import Booking
from gpubot.domain.ports import Extendable
from gpubot.domain.pricing import interval_cost
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.billing import instance_of

__all__ = ["extend_hold", "extension_budget", "extension_cost"]


def extend_hold(engine: Engine, booking: Booking, by: timedelta) -> None:
    """Tell a provider that holds the machine for a set time (a Slurm job's TimeLimit) to hold it `by` longer;
    its refusal refuses the extension, in the provider's words, and rolls the rest back."""
    provider = engine.providers.get(booking.provider or "")
    if not isinstance(provider, Extendable) or not booking.instance_id:
        return
    try:
        provider.extend(instance_of(booking), by)
    except PastTimeLimit as exc:
        raise Refused("{provider} holds one machine for at most {limit}; #{booking} would need {asked}.",
                      provider=booking.provider, limit=format_duration(exc.limit), booking=booking.id,
                      asked=format_duration(exc.asked)) from None
    except ProviderError as exc:
        raise Refused("{provider} did not extend #{booking}: {reason}", provider=booking.provider,
                      booking=booking.id, reason=exc.detail or exc.kind) from None


def extension_cost(engine: Engine, booking: Booking, plan: Extension) -> Decimal:
    """The extension's cost: the booking's own price, continuing its use (tiers count from its start)."""
    offset = int((booking.ends_at - booking.started_at).total_seconds())
    native = interval_cost(booking.price_per_gpu_hour or Decimal(0), booking.count, offset,
                           int(plan.by.total_seconds()), engine.tiers(booking.provider))
    return engine.to_team(native, booking.currency or engine.currency)


def extension_budget(engine: Engine, booking: Booking, lines: list[BudgetLine], added: Decimal,
                     actor: str) -> tuple[Passed, ...]:
    """() when the added cost fits; the budgets it passes when it may (warn mode, or an admin); refused otherwise
    (an extension cannot wait for an approval: the machine runs meanwhile)."""
    decision = over_budget_decision(lines, added, engine.policy.budget.over_budget, engine.is_admin(actor))
    if decision == "ok":
        return ()
    if decision in ("block", "approve"):
        raise OverBudget(added, engine.currency, passed_budgets(lines, added), extending=booking.label,
                         mode=engine.policy.budget.over_budget)
    return passed_budgets(lines, added)
