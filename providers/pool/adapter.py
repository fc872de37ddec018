"""The team's pool: owned or monthly-rented machines from the config. No API; who holds which GPUs is
known from the ledger, which the engine passes in as `allocations`. With `claim`/`unclaim` (the engine's
database-backed slot claims) a launch is safe across threads and processes; without them it is only safe
within this process."""

from __future__ import annotations

import threading
from collections.abc import Callable
from decimal import Decimal

from gpubot.domain.errors import NoCapacity
from gpubot.domain.model import Instance, Offer, OfferRequest
from gpubot.domain.ports import GpuReading, LaunchSpec
from gpubot.providers.pool.config import PoolConfig

__all__ = ["Allocation", "TeamPool"]

Allocation = tuple[str, str, int]  # (host, instance name, GPUs held)
Claim = Callable[[str, int, int, str], bool]  # (host, its GPUs, GPUs wanted, instance name) -> claimed
Unclaim = Callable[[str], None]  # instance name


class TeamPool:
    """A provider over the machines in `[providers.NAME] machines`; marginal price zero."""

    kind = "pool"

    def __init__(self, name: str, policy: PoolConfig, allocations: Callable[[], list[Allocation]],
                 claim: Claim | None = None, unclaim: Unclaim | None = None) -> None:
        self.name, self.policy = name, policy
        self._allocations, self._claim, self._unclaim = allocations, claim, unclaim
        self._lock = threading.Lock()

    def _free(self) -> dict[str, int]:
        free = {m.host: m.gpus for m in self.policy.machines}
        for host, _name, gpus in self._allocations():
            if host in free:
                free[host] -= gpus
        return free

    def offers(self, request: OfferRequest) -> list[Offer]:
        """One offer per machine of the right GPU type; available when it has enough free GPUs."""
        free = self._free()
        return [Offer(self.name, m.region, m.gpu, request.count, Decimal(0), self.policy.currency,
                      available=free.get(m.host, 0) >= request.count, ref=m.host)
                for m in self.policy.machines if m.gpu == request.gpu and m.gpus >= request.count]

    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """Claim GPUs on the offer's machine (through `claim` when given, which records it)."""
        gpus = next((m.gpus for m in self.policy.machines if m.host == offer.ref), 0)
        with self._lock:
            if self._claim is not None:
                claimed = self._claim(offer.ref, gpus, offer.count, spec.name)
            else:
                claimed = self._free().get(offer.ref, 0) >= offer.count
        if not claimed:
            raise NoCapacity(self.name, f"{offer.ref} has fewer than {offer.count} free GPUs", "offer")
        return Instance(self.name, f"{offer.ref}/{spec.name}", spec.name, offer.region, "running", True,
                        f"ssh {offer.ref}", offer.gpu, offer.count, extra={"host": offer.ref})

    def describe(self, instance: Instance) -> Instance:
        """Pool machines are always reachable while the claim stands."""
        held = {name for _host, name, _gpus in self._allocations()}
        status = "running" if instance.name in held else "terminated"
        host = instance.instance_id.partition("/")[0]  # `<host>/<name>`, as launch named it
        ssh = instance.ssh or (f"ssh {host}" if host else None)
        return Instance(self.name, instance.instance_id, instance.name, instance.region, status,
                        status == "running", ssh if status == "running" else None, instance.gpu, instance.count)

    def terminate(self, instance: Instance) -> None:
        """Nothing to stop: the claim ends (at once with `unclaim`, else when the booking is released)."""
        if self._unclaim is not None:
            self._unclaim(instance.name)

    def list_owned(self) -> list[Instance]:
        """Every claim on the pool, as instances."""
        return [Instance(self.name, f"{host}/{name}", name, "on-prem", "running", True, f"ssh {host}",
                         count=gpus, extra={"host": host}) for host, name, gpus in self._allocations()]

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """The pool has no API; its machines push telemetry through the agent."""
        return []
