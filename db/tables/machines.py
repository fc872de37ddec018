"""Machines gpubot runs itself: team-pool slots claimed, the simulated cloud's machines."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = ["PoolClaimRow", "SimulatedMachineRow"]


class PoolClaimRow(SQLModel, table=True):
    """One GPU slot of a team-pool machine held by an instance; the unique key makes a slot go to one only."""

    __tablename__ = "pool_claims"
    __table_args__ = (UniqueConstraint("provider", "host", "slot", name="uq_pool_claim_slot"),)

    id: int | None = Field(default=None, primary_key=True)
    provider: str
    host: str
    slot: int
    instance_name: str = Field(index=True)
    claimed_at: datetime


class SimulatedMachineRow(SQLModel, table=True):
    """A machine a simulated cloud runs, kept so that the demo's cloud outlives a restart like a real one."""

    __tablename__ = "simulated_machines"

    provider: str = Field(primary_key=True)
    instance_id: str = Field(primary_key=True)
    name: str
    region: str
    gpu: str
    count: int
    ssh: str | None = None
    launched_at: float  # epoch seconds on the simulated cloud's clock
