"""The simulated clouds' machine store on the bot's database (the MachineStore port of
domain/ports.py), so that the demo's cloud outlives a restart."""

from __future__ import annotations

from gpubot.db import sim_machines
from gpubot.db.database import Database
from gpubot.domain.model import Instance

__all__ = ["DatabaseMachines"]


class DatabaseMachines:
    """MachineStore over the ledger database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._migrated = False

    def load(self, provider: str) -> list[tuple[Instance, float]]:
        """Every machine `provider` runs, with when it was launched."""
        if not self._migrated:  # the providers are built before the runtime migrates: the table must exist
            self.db.upgrade()
            self._migrated = True
        with self.db.session() as session:
            return sim_machines.machines_of(provider, session=session)

    def save(self, instance: Instance, launched_at: float) -> None:
        """Remember a machine just launched."""
        with self.db.session() as session:
            sim_machines.remember_machine(instance, launched_at, session=session)

    def remove(self, provider: str, instance_id: str) -> None:
        """Forget a machine just terminated."""
        with self.db.session() as session:
            sim_machines.forget_machine(provider, instance_id, session=session)
