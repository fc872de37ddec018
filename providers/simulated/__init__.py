"""The simulated cloud: an in-process provider for the demo, the engine tests, the benchmarks and the replay."""

from __future__ import annotations

from collections.abc import Mapping

from gpubot.providers.registry import BuildContext, ProviderKind, Replayable
from gpubot.providers.simulated.config import SimulatedConfig

__all__ = ["KIND"]

_INTERRUPTIONS = "spot_interruptions_per_hour"


def _build(name: str, config: SimulatedConfig, context: BuildContext):
    from gpubot.providers.simulated.adapter import SimulatedCloud

    return SimulatedCloud(name, config, sleep=context.sleep, clock=context.clock, store=context.machines)


def _sells_spot(table: Mapping) -> bool:
    return any(s.get("spot_price") is not None for s in table.get("stock", []))


KIND = ProviderKind(
    name="simulated", config=SimulatedConfig, build=_build, machine="container", rented=False, default_image=True,
    order=60,
    replay=Replayable(sells=lambda config: {s.gpu for s in config.stock}, quiet={"telemetry": False},
                      sells_spot=_sells_spot,
                      stock=lambda config: [(s.region, s.gpu, s.count, s.price, s.spot_price) for s in config.stock],
                      interrupt=lambda table, rate: {} if _INTERRUPTIONS in table else {_INTERRUPTIONS: rate}))
