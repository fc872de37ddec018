"""`[providers.NAME]` of kind "pool": the machines the team owns or rents by the month."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from gpubot.domain.policy_sections import Money, ProviderPolicy
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PoolConfig", "PoolMachine"]


class PoolMachine(BaseModel):
    """A team-owned or monthly-rented machine."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str
    gpu: str
    gpus: Annotated[int, Field(gt=0)]
    monthly_cost: Money = Decimal("0")
    region: str = "on-prem"


class PoolConfig(ProviderPolicy):
    """The team pool: the common keys and its machines."""

    kind: Literal["pool"] = "pool"
    machines: list[PoolMachine] = Field(default_factory=list)
