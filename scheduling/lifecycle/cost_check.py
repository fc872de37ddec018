"""Provider cost reconciliation: compare what a provider reports an instance costs with our own figure.

A provider that reports a running total (`Instance.cost_so_far`) is compared with what the ledger accrues
for the same time; one that reports the instance's hourly rate (RunPod `cost`, AutoDL `price`, kept by the
adapters in `Instance.extra`) is compared with the snapshot price × GPUs. Both in the provider's currency.
A difference over 2 % is logged and stored (cost_checks, latest per booking) for the digest: the instance
is gone by digest time, so the comparison must be made while it runs.
"""

from __future__ import annotations

import logging
from decimal import Decimal

from gpubot.db import bookings as booking_repo
from gpubot.db import reports as reports_db
from gpubot.domain.costing import CostCheck, cost_differs
from gpubot.domain.errors import ProviderError
from gpubot.domain.model import Booking, BookingState, Instance
from gpubot.domain.pricing import interval_cost
from gpubot.domain.spot import PREEMPTED
from gpubot.scheduling.acquisition.preemption import preempted
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.billing import instance_of

__all__ = ["RATE_KEYS", "check_provider_costs", "compare"]

log = logging.getLogger(__name__)

RATE_KEYS = ("cost_per_hour", "price_per_hour_cny")  # where adapters keep a reported hourly rate


def check_provider_costs(engine: Engine) -> list[CostCheck]:
    """Describe every running booking's instance and record the ones whose reported cost is over 2 % off."""
    with engine.db.session() as session:
        running = booking_repo.list_bookings(session=session, states=[BookingState.BOOTING, BookingState.ACTIVE])
    found = []
    for booking in running:
        provider = engine.providers.get(booking.provider or "")
        if provider is None or booking.price_per_gpu_hour is None:
            continue
        try:
            instance = provider.describe(instance_of(booking))
        except ProviderError as exc:
            log.info("cost check of #%s skipped: %s", booking.id, exc)
            continue
        if instance.status == PREEMPTED:  # learnt here first: settle it (a stopped machine's cost says nothing)
            preempted(engine, booking, instance)
            continue
        check = compare(engine, booking, instance)
        if check is not None:
            found.append(check)
            _record(engine, check)
    return found


def compare(engine: Engine, booking: Booking, instance: Instance) -> CostCheck | None:
    """A CostCheck when the provider's figure for `instance` is more than 2 % away from ours, else None."""
    now = engine.now()
    price = booking.price_per_gpu_hour or Decimal(0)
    if instance.cost_so_far is not None and booking.started_at:
        seconds = max(0, int((now - booking.started_at).total_seconds()))
        ours = interval_cost(price, booking.count, 0, seconds, engine.tiers(booking.provider))
        basis, theirs = "total", Decimal(instance.cost_so_far)
    else:
        rate = next((instance.extra[k] for k in RATE_KEYS if instance.extra.get(k) is not None), None)
        if rate is None:
            return None
        basis, ours, theirs = "rate", price * booking.count, Decimal(str(rate))
    diff = cost_differs(ours, theirs)
    if diff is None:
        return None
    return CostCheck(booking.id, booking.provider or "", basis, ours, theirs, booking.currency or engine.currency,
                     diff * 100, now)


def _record(engine: Engine, check: CostCheck) -> None:
    with engine.db.session() as session:
        first = reports_db.record_cost_check(check, session=session)
    if first:
        log.warning("provider cost of #%s on %s differs by %.1f %%: they report %s %s (%s), we have %s",
                    check.booking_id, check.provider, check.diff_percent, check.theirs, check.currency, check.basis,
                    check.ours)
