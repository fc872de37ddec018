"""The team pool: machines the team owns or rents by the month, listed in the policy. Taken first (already paid
for); their fees are billed in shares to the bookings that used them."""

from __future__ import annotations

from functools import partial

from gpubot.providers.pool.config import PoolConfig
from gpubot.providers.registry import BuildContext, ProviderKind, Replayable

__all__ = ["KIND"]


def _build(name: str, config: PoolConfig, context: BuildContext):
    from gpubot.providers.pool.adapter import TeamPool

    slots = context.slots
    if slots is None:  # built to check its table (check-config), where nothing asks who holds its GPUs
        return TeamPool(name, config, partial(_not_read, name))
    return TeamPool(name, config, partial(slots.held, name), slots.claim(name) if slots.claim else None,
                    slots.release)


def _not_read(name: str) -> list:
    raise LookupError(f"who holds pool {name}'s GPUs is in the ledger, which this command does not read")


KIND = ProviderKind(
    name="pool", config=PoolConfig, build=_build, machine="host", rented=False, default_image=False, order=0,
    monthly_fees=lambda config: [(m.host, m.monthly_cost) for m in config.machines],
    replay=Replayable(sells=lambda config: {m.gpu for m in config.machines},
                      stock=lambda config: [(f"{m.region}/{m.host}", m.gpu, m.gpus, None, None)
                                            for m in config.machines]))
