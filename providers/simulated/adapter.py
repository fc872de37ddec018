"""The simulated cloud: an in-process provider with configurable stock, prices, latency, failures, boot time, spot
interruptions and telemetry. The demo, the engine tests and the benchmarks use it; it keeps the Provider
contract exactly.

Booting (`boot_time`, default 0: reachable at launch): a launched machine is `booting`, not ready and without SSH
details, until `boot_time` has passed on the cloud's clock; then `running` with its SSH line, as a real cloud's
describe shows it. `never_ready` keeps every machine booting for ever (the ready-timeout path). A booting machine
is billed (run_seconds counts from the launch) and reports no GPU readings yet.

Spot interruptions: with `spot_interruptions_per_hour` = λ > 0, each spot machine is taken back after an
exponentially distributed time (mean 1/λ hours) drawn at launch from a generator seeded by the cloud's name and
`seed` (0 when unset), so a run is reproducible. From that moment it reports status "preempted" with its
`stopped_at`, its GPUs go back to stock, and it stays listed until terminated, as a real cloud keeps an
interrupted instance visible for a while. (A machine restored from a store after a restart is not interrupted.)
"""

from __future__ import annotations

import heapq
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal

from gpubot.domain.errors import NoCapacity, Transient
from gpubot.domain.model import Instance, Offer, OfferRequest
from gpubot.domain.ports import GpuReading, LaunchSpec, MachineStore
from gpubot.domain.spot import PREEMPTED
from gpubot.providers.simulated.config import SimulatedConfig

__all__ = ["SimulatedCloud"]


@dataclass
class _Machine:
    instance: Instance
    launched_at: float
    terminated_at: float | None = None
    interrupt_at: float | None = None  # when the provider takes this spot machine back
    stopped_at: float | None = None  # ... once it did
    readings: list[GpuReading] = field(default_factory=list)


class SimulatedCloud:
    """A provider that lives in memory; `set_stock`, `set_telemetry` and `fail_next` steer it."""

    kind = "simulated"

    def __init__(self, name: str, policy: SimulatedConfig, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time, store: MachineStore | None = None) -> None:
        self.name, self.policy = name, policy
        self._sleep, self._clock = sleep, clock
        self._random = random.Random(policy.seed)
        self._interruptions = random.Random(f"{name}:{policy.seed or 0}:interruptions")
        self._due: list[tuple[float, str]] = []  # (interrupt_at, instance id) of spot machines, soonest first
        self._lock = threading.Lock()
        self._stock = {(s.gpu, s.region): s.count for s in policy.stock}
        self._capacity = dict(self._stock)  # the most GPUs of a type a region ever has: no machine is larger
        self._prices = {(s.gpu, s.region): (s.price, s.spot_price) for s in policy.stock}
        self._max_cuda = {(s.gpu, s.region): s.max_cuda for s in policy.stock}
        self._machines: dict[str, _Machine] = {}
        self._fail_next: dict[str, list[Exception]] = {"launch": [], "describe": []}
        self.calls: dict[str, int] = {"offers": 0, "launch": 0, "describe": 0, "terminate": 0, "list": 0}
        self.launch_specs: list[LaunchSpec] = []  # what each launch was asked for (CUDA floor, image)
        self.call_log: list[tuple[str, float, float]] = []  # (call, started, finished) on the monotonic clock
        self._store = store
        for instance, launched_at in store.load(name) if store else []:  # machines that outlived a restart
            self._restore(instance, launched_at)

    def _restore(self, instance: Instance, launched_at: float) -> None:
        """Run a machine the store kept again: its GPUs leave the stock."""
        self._stock[(instance.gpu, instance.region)] = self._stock.get((instance.gpu, instance.region), 0) - \
            instance.count
        self._machines[instance.instance_id] = _Machine(instance, launched_at, readings=[
            GpuReading(i, 60.0, 60.0) for i in range(instance.count)])

    # -- steering (tests, demo) ---------------------------------------------------------------------------
    def set_stock(self, gpu: str, region: str, count: int, price: Decimal | None = None) -> None:
        """Set how many GPUs of a type are free in a region (and optionally their price)."""
        with self._lock:
            self._stock[(gpu, region)] = count
            self._capacity[(gpu, region)] = max(self._capacity.get((gpu, region), 0), count)
            if price is not None or (gpu, region) not in self._prices:
                self._prices[(gpu, region)] = (price or Decimal("2.00"), None)

    def fail_next(self, error: Exception, call: str = "launch") -> None:
        """Make the next `call` (launch or describe) raise `error`."""
        self._fail_next[call].append(error)

    def set_telemetry(self, instance_id: str, readings: list[GpuReading]) -> None:
        """Set what the instance's GPUs report from now on."""
        self._machines[instance_id].readings = readings

    def run_seconds(self, instance_id: str) -> float:
        """How long an instance ran (its own record, for billing checks): until preempted or terminated."""
        machine = self._machines[instance_id]
        return (machine.stopped_at or machine.terminated_at or self._clock()) - machine.launched_at

    def preempt(self, instance_id: str) -> None:
        """Take a machine back now, as a spot interruption does."""
        with self._lock:
            self._interrupt(self._machines[instance_id], self._clock())

    def interruption_at(self, instance_id: str) -> datetime | None:
        """When a running spot machine will be taken back (drawn at launch), None if never or already."""
        machine = self._machines[instance_id]
        if machine.interrupt_at is None or machine.stopped_at is not None or machine.terminated_at is not None:
            return None
        return datetime.fromtimestamp(machine.interrupt_at, UTC)

    # -- Provider protocol --------------------------------------------------------------------------------
    def offers(self, request: OfferRequest) -> list[Offer]:
        """One offer per region that sells the GPU type in a machine that large; `available` when enough are
        free."""
        self._delay("offers")
        with self._lock:
            self._interrupt_due()
            return [self._offer(gpu, region, request) for (gpu, region) in self._prices
                    if gpu == request.gpu and self._capacity.get((gpu, region), 0) >= request.count]

    def _offer(self, gpu: str, region: str, request: OfferRequest) -> Offer:
        price, spot_price = self._prices[(gpu, region)]
        spot = request.spot and spot_price is not None
        return Offer(self.name, region, gpu, request.count, spot_price if spot else price, self.policy.currency,
                     spot=spot, available=self._stock.get((gpu, region), 0) >= request.count,
                     ref=f"sim-{gpu}", max_cuda=self._max_cuda.get((gpu, region)))

    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """Take GPUs from stock and start a machine, or raise NoCapacity."""
        self._delay("launch")
        self.launch_specs.append(spec)
        if self._fail_next["launch"]:
            raise self._fail_next["launch"].pop(0)
        if self._random.random() < self.policy.failure_rate:
            raise Transient(self.name, "simulated failure")
        with self._lock:
            self._interrupt_due()
            if self._stock.get((offer.gpu, offer.region), 0) < offer.count:
                raise NoCapacity(self.name, f"no {offer.gpu} left in {offer.region}", "region", offer.region)
            self._stock[(offer.gpu, offer.region)] -= offer.count
            instance = Instance(self.name, f"sim-{uuid.uuid4().hex[:12]}", spec.name, offer.region, "running",
                                True, f"ssh gpu@{spec.name}.sim.gpubot.local", offer.gpu, offer.count)
            machine = _Machine(instance, self._clock(), readings=[GpuReading(i, 60.0, 60.0)
                                                                  for i in range(offer.count)])
            self._machines[instance.instance_id] = machine
            self._schedule_interruption(machine, offer)
            if self._store:
                self._store.save(instance, machine.launched_at)
            return self._as_now(machine)

    def _booted(self, machine: _Machine) -> bool:
        boot = self.policy.boot_time.total_seconds()
        return not self.policy.never_ready and self._clock() - machine.launched_at >= boot

    def _as_now(self, machine: _Machine) -> Instance:
        """The machine as a describe shows it now: booting (no SSH yet) until its boot time has passed; a preempted
        one as it was taken back."""
        if machine.stopped_at is not None or self._booted(machine):
            return machine.instance
        return replace(machine.instance, status="booting", ready=False, ssh=None)

    def _schedule_interruption(self, machine: _Machine, offer: Offer) -> None:
        rate = self.policy.spot_interruptions_per_hour
        if offer.spot and rate > 0:
            machine.interrupt_at = machine.launched_at + self._interruptions.expovariate(rate) * 3600
            heapq.heappush(self._due, (machine.interrupt_at, machine.instance.instance_id))

    def _interrupt_due(self) -> None:
        """Take back every spot machine whose interruption time has come (call with the lock held)."""
        now = self._clock()
        while self._due and self._due[0][0] <= now:
            at, instance_id = heapq.heappop(self._due)
            self._interrupt(self._machines[instance_id], at)

    def _interrupt(self, machine: _Machine, at: float) -> None:
        if machine.stopped_at is not None or machine.terminated_at is not None:
            return
        machine.stopped_at = at
        machine.instance = replace(machine.instance, status=PREEMPTED, ready=False,
                                   stopped_at=datetime.fromtimestamp(at, UTC))
        key = (machine.instance.gpu, machine.instance.region)
        self._stock[key] = self._stock.get(key, 0) + machine.instance.count

    def describe(self, instance: Instance) -> Instance:
        """The machine as it is now; unknown or terminated ones say "terminated"."""
        self._delay("describe")
        if self._fail_next["describe"]:
            raise self._fail_next["describe"].pop(0)
        with self._lock:
            self._interrupt_due()
        machine = self._machines.get(instance.instance_id)
        if machine is None or machine.terminated_at is not None:
            return Instance(self.name, instance.instance_id, instance.name, instance.region, "terminated")
        return self._as_now(machine)

    def terminate(self, instance: Instance) -> None:
        """Stop the machine and return its GPUs to stock (a preempted one gave them back already); safe twice."""
        self._delay("terminate")
        with self._lock:
            machine = self._machines.get(instance.instance_id)
            if machine is None or machine.terminated_at is not None:
                return
            machine.terminated_at = self._clock()
            if machine.stopped_at is None:
                key = (machine.instance.gpu, machine.instance.region)
                self._stock[key] = self._stock.get(key, 0) + machine.instance.count
            if self._store:
                self._store.remove(self.name, instance.instance_id)

    def list_owned(self) -> list[Instance]:
        """Every running or preempted machine this bot launched and did not terminate."""
        self._delay("list")
        with self._lock:
            self._interrupt_due()
        return [self._as_now(m) for m in self._machines.values() if m.terminated_at is None]

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """What the machine's GPUs report (nothing once it is preempted or terminated)."""
        with self._lock:
            self._interrupt_due()
        machine = self._machines.get(instance.instance_id)
        alive = machine is not None and machine.terminated_at is None and machine.stopped_at is None \
            and self._booted(machine)
        return list(machine.readings) if alive and self.policy.telemetry else []

    def _delay(self, call: str) -> None:
        started = time.monotonic()
        self.calls[call] += 1
        if self.policy.latency.total_seconds() > 0:
            self._sleep(self.policy.latency.total_seconds())
        self.call_log.append((call, started, time.monotonic()))
