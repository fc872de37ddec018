"""The simulated cloud's machines, kept in the ledger database (the MachineStore port of domain/ports.py)."""

from __future__ import annotations

from gpubot.db.tables.machines import SimulatedMachineRow
from gpubot.domain.model import Instance
from sqlalchemy import delete
from sqlmodel import Session, col, select

__all__ = ["forget_machine", "machines_of", "remember_machine"]


def remember_machine(instance: Instance, launched_at: float, *, session: Session) -> None:
    """Keep a machine a simulated cloud launched (again: replaced)."""
    session.merge(SimulatedMachineRow(provider=instance.provider, instance_id=instance.instance_id,
                                      name=instance.name, region=instance.region, gpu=instance.gpu,
                                      count=instance.count, ssh=instance.ssh, launched_at=launched_at))


def forget_machine(provider: str, instance_id: str, *, session: Session) -> None:
    """Drop a terminated machine."""
    session.execute(delete(SimulatedMachineRow).where(col(SimulatedMachineRow.provider) == provider,
                                                      col(SimulatedMachineRow.instance_id) == instance_id))


def machines_of(provider: str, *, session: Session) -> list[tuple[Instance, float]]:
    """Every machine kept for `provider`, running, with its launch time, oldest first."""
    rows = session.exec(select(SimulatedMachineRow).where(SimulatedMachineRow.provider == provider)
                        .order_by(col(SimulatedMachineRow.launched_at))).all()
    return [(Instance(r.provider, r.instance_id, r.name, r.region, "running", True, r.ssh, r.gpu, r.count),
             r.launched_at) for r in rows]
