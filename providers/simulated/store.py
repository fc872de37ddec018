"""Where the simulated cloud keeps its machines when they must outlive the process (the demo: a restart keeps
running bookings running). The engine's tests and the replays pass no store: their clouds live in memory.

The store is a port: gpubot/wiring.py injects one backed by the demo's database (providers never import db).
"""

from __future__ import annotations

from typing import Protocol

from gpubot.domain.model import Instance

__all__ = ["MachineStore"]


class MachineStore(Protocol):
    """The running machines of simulated clouds, by provider name; each with its launch time (epoch seconds)."""

    def load(self, provider: str) -> list[tuple[Instance, float]]:
        """Every machine `provider` runs, with when it was launched."""

    def save(self, instance: Instance, launched_at: float) -> None:
        """Remember a machine just launched."""

    def remove(self, provider: str, instance_id: str) -> None:
        """Forget a machine just terminated (a machine not remembered is no error)."""
