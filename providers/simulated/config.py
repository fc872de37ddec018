"""`[providers.NAME]` of kind "simulated": the stock it sells and how it behaves (latency, failures, boot time, spot
interruptions, telemetry)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Annotated, Literal

from gpubot.domain.policy_sections import Cuda, Duration, ImageProviderPolicy, Money
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SimulatedConfig", "SimulatedStock"]


class SimulatedStock(BaseModel):
    """Stock of one GPU type in one region of the simulated cloud."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu: str
    region: str = "sim-1"
    count: Annotated[int, Field(ge=0)] = 8
    price: Money = Decimal("2.00")
    spot_price: Money | None = None
    max_cuda: Cuda | None = None


class SimulatedConfig(ImageProviderPolicy):
    """A simulated cloud: the common keys, an image, and its stock and behaviour."""

    kind: Literal["simulated"] = "simulated"
    stock: list[SimulatedStock] = Field(default_factory=list)
    latency: Duration = timedelta(0)  # added to every call
    failure_rate: Annotated[float, Field(ge=0, le=1)] = 0.0  # share of launches that fail with a transient error
    spot_interruptions_per_hour: Annotated[float, Field(ge=0)] = 0.0  # per spot machine, on average
    seed: int | None = None
    telemetry: bool = True  # report readings itself (off when an agent pushes them)
    boot_time: Duration = timedelta(0)  # how long a launched machine takes to become reachable
    never_ready: bool = False  # launched machines never become reachable (the ready-timeout path)
