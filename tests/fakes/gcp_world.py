"""The state behind the fake Compute Engine API: zones that sell machine types, GPU quotas, instances that boot,
operations that finish later, Spot VMs that get preempted. Time is read from `clock` on every call (nothing runs
in the background), so an operation is RUNNING until `op_seconds` after its request and DONE afterwards.

What it models (Google's REST reference and spec providers.md §6, §10):
- instances.insert answers at once with a RUNNING zonal operation; the instance is listed as PROVISIONING
  meanwhile. When the operation is DONE it either carries `error.errors[]` (the zone had no capacity:
  ZONE_RESOURCE_POOL_EXHAUSTED, a regional or global GPU quota: QUOTA_EXCEEDED, or an injected code) and the
  instance is gone, or the instance goes STAGING and, `boot_seconds` later, RUNNING with its external IP.
- instances.delete answers with an operation; the instance is STOPPING until it is gone. Deleting one whose
  insert is still running is refused with resourceNotReady, as Compute Engine does.
- preempting a Spot VM records a `compute.instances.preempted` operation (the documented signal) and stops it;
  with instanceTerminationAction DELETE it is then deleted, with STOP it stays TERMINATED.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ACCELERATOR_TYPES", "MACHINE_TYPES", "FakeError", "GcpWorld", "Zone"]

# name → (vCPUs, memory MB, bundled accelerator (type, count) or None), from Google's machine-type pages.
MACHINE_TYPES: dict[str, tuple[int, int, tuple[str, int] | None]] = {
    "e2-standard-4": (4, 16384, None),
    **{f"n1-standard-{n}": (n, 3840 * n, None) for n in (4, 8, 16, 32)},
    **{f"g2-standard-{n}": (n, 4096 * n, ("nvidia-l4", gpus))
       for n, gpus in ((4, 1), (8, 1), (12, 1), (16, 1), (24, 2), (32, 1), (48, 4), (96, 8))},
    **{f"a2-highgpu-{n}g": (12 * n, 87040 * n, ("nvidia-tesla-a100", n)) for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": (96, 1392640, ("nvidia-tesla-a100", 16)),
    **{f"a2-ultragpu-{n}g": (12 * n, 174080 * n, ("nvidia-a100-80gb", n)) for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": (26 * n, 239616 * n, ("nvidia-h100-80gb", n)) for n in (1, 2, 4, 8)},
}
# name → (description, maximumCardsPerInstance, quota metric)
ACCELERATOR_TYPES: dict[str, tuple[str, int, str]] = {
    "nvidia-tesla-t4": ("NVIDIA T4", 4, "NVIDIA_T4_GPUS"),
    "nvidia-tesla-v100": ("NVIDIA V100", 8, "NVIDIA_V100_GPUS"),
    "nvidia-l4": ("NVIDIA L4", 8, "NVIDIA_L4_GPUS"),
    "nvidia-tesla-a100": ("NVIDIA A100 40GB", 16, "NVIDIA_A100_GPUS"),
    "nvidia-a100-80gb": ("NVIDIA A100 80GB", 8, "NVIDIA_A100_80GB_GPUS"),
    "nvidia-h100-80gb": ("NVIDIA H100 80GB", 8, "NVIDIA_H100_GPUS"),
}


@dataclass
class FakeError(Exception):
    """A synchronous API error: HTTP status, reason and message."""

    status: int
    reason: str
    message: str


@dataclass
class Zone:
    """One zone: what it sells, how many GPUs of each accelerator type are free (None: plenty), queued faults."""

    name: str
    machine_types: set[str] = field(default_factory=lambda: set(MACHINE_TYPES))
    accelerators: set[str] = field(default_factory=lambda: set(ACCELERATOR_TYPES))
    free: dict[str, int] = field(default_factory=dict)
    op_errors: list[tuple[str, str]] = field(default_factory=list)  # (code, message) for the next inserts
    sync_errors: list[FakeError] = field(default_factory=list)  # answered to the next inserts

    @property
    def region(self) -> str:
        """The zone's region."""
        return self.name.rsplit("-", 1)[0]


class GcpWorld:
    """Zones, quotas, instances and operations of one fake project."""

    def __init__(self, project: str, zones: list[Zone], *, op_seconds: float = 0.3, boot_seconds: float = 0.3,
                 delete_seconds: float = 0.2, clock: Callable[[], float] = time.monotonic) -> None:
        self.project, self.clock = project, clock
        self.zones = {z.name: z for z in zones}
        self.op_seconds, self.boot_seconds, self.delete_seconds = op_seconds, boot_seconds, delete_seconds
        self.quotas: dict[tuple[str, str], float] = {}  # (region or "global", metric) → limit
        self.instances: dict[tuple[str, str], dict] = {}
        self.operations: dict[tuple[str, str], dict] = {}
        self.by_request_id: dict[str, tuple[str, str]] = {}
        self.lock = threading.RLock()
        self._ids = itertools.count(5_000_000_000_000_000_001)

    # -- the passing of time --------------------------------------------------------------------------------
    def tick(self) -> float:
        """Finish what is due; returns now."""
        now = self.clock()
        with self.lock:
            for key, op in list(self.operations.items()):
                if op["status"] != "DONE" and op["done_at"] <= now:
                    self._finish(key, op)
            for key, inst in list(self.instances.items()):
                if inst.get("gone_at") is not None and inst["gone_at"] <= now:
                    self._end(key, inst)
        return now

    def _finish(self, key: tuple[str, str], op: dict) -> None:
        op["status"] = "DONE"
        target = (key[0], op["target"])
        if op["type"] == "insert" and op.get("error") and target in self.instances:
            del self.instances[target]

    def _end(self, key: tuple[str, str], inst: dict) -> None:
        if inst.get("stop_only"):
            inst.update(status="TERMINATED", gone_at=None)
        else:
            del self.instances[key]

    def status(self, inst: dict, now: float) -> str:
        """PROVISIONING → STAGING → RUNNING, or STOPPING/TERMINATED once deleted or preempted."""
        if inst.get("status"):
            return inst["status"]
        if now < inst["provisioned_at"]:
            return "PROVISIONING"
        return "STAGING" if now < inst["provisioned_at"] + self.boot_seconds else "RUNNING"

    # -- instances --------------------------------------------------------------------------------------------
    def insert(self, zone: str, body: dict, request_id: str | None) -> dict:
        """Accept an insert: the instance is PROVISIONING and its operation RUNNING (or a FakeError now)."""
        now = self.tick()
        with self.lock:
            if request_id and request_id in self.by_request_id:
                return self.operations[self.by_request_id[request_id]]
            place = self._zone(zone)
            if place.sync_errors:
                raise place.sync_errors.pop(0)
            name = str(body.get("name") or "")
            if (zone, name) in self.instances:
                raise FakeError(409, "alreadyExists",
                                f"The resource 'projects/{self.project}/zones/{zone}/instances/{name}' already exists")
            machine, gpus = self._validated(place, body)
            op = self._operation(zone, "insert", name, now, self._outcome(place, gpus, body))
            inst = {"id": str(next(self._ids)), "name": name, "zone": zone, "machine_type": machine, "gpus": gpus,
                    "body": body, "created": now, "provisioned_at": op["done_at"], "status": None,
                    "holding": not op["error"], "ip": f"10.128.0.{len(self.instances) + 2}",
                    "nat_ip": f"34.{len(self.instances) % 250 + 1}.7.9"}
            self.instances[(zone, name)] = inst
            if request_id:
                self.by_request_id[request_id] = (zone, op["name"])
            return op

    def delete(self, zone: str, name: str) -> dict:
        """Start deleting an instance (STOPPING, then gone)."""
        now = self.tick()
        with self.lock:
            inst = self.instance(zone, name)
            if self.status(inst, now) == "PROVISIONING":
                raise FakeError(400, "resourceNotReady",
                                f"The resource 'projects/{self.project}/zones/{zone}/instances/{name}' is not ready")
            if inst.get("gone_at") is None:
                inst.update(status="STOPPING", gone_at=now + self.delete_seconds, stop_only=False)
                self._release(inst)
            return self._operation(zone, "delete", name, now, None, seconds=self.delete_seconds)

    def preempt(self, zone: str, name: str) -> None:
        """Preempt a Spot VM: the documented preemption operation, then stop and (action DELETE) delete it."""
        now = self.tick()
        with self.lock:
            inst = self.instance(zone, name)
            scheduling = inst["body"].get("scheduling") or {}
            assert scheduling.get("provisioningModel") == "SPOT", "only Spot VMs are preempted"
            op = self._operation(zone, "compute.instances.preempted", name, now, None, seconds=0.0)
            op.update(status="DONE", statusMessage="Instance was preempted.", user="system")
            stop_only = scheduling.get("instanceTerminationAction", "STOP") != "DELETE"
            inst.update(status="STOPPING", gone_at=now + self.delete_seconds, stop_only=stop_only)
            self._release(inst)

    def instance(self, zone: str, name: str) -> dict:
        """A live instance, or a 404 FakeError."""
        self._zone(zone)
        inst = self.instances.get((zone, name))
        if inst is None:
            raise FakeError(404, "notFound",
                            f"The resource 'projects/{self.project}/zones/{zone}/instances/{name}' was not found")
        return inst

    def live(self) -> list[dict]:
        """Every instance that exists now (any status)."""
        self.tick()
        with self.lock:
            return list(self.instances.values())

    # -- operations ---------------------------------------------------------------------------------------------
    def operation(self, zone: str, name: str) -> dict:
        """An operation, or a 404 FakeError."""
        self._zone(zone)
        self.tick()
        op = self.operations.get((zone, name))
        if op is None:
            raise FakeError(404, "notFound",
                            f"The resource 'projects/{self.project}/zones/{zone}/operations/{name}' was not found")
        return op

    def _operation(self, zone: str, kind: str, target: str, now: float, error: tuple[str, str] | None,
                   seconds: float | None = None) -> dict:
        op_id = next(self._ids)
        op = {"id": str(op_id), "name": f"operation-{op_id}-{kind.rsplit('.', 1)[-1]}", "type": kind,
              "target": target, "created": now, "done_at": now + (self.op_seconds if seconds is None else seconds),
              "status": "RUNNING", "error": error, "user": "gpubot@example.iam.gserviceaccount.com"}
        self.operations[(zone, op["name"])] = op
        return op

    # -- what the zone decides ------------------------------------------------------------------------------
    def _zone(self, zone: str) -> Zone:
        if zone not in self.zones:
            raise FakeError(404, "notFound", f"The resource 'projects/{self.project}/zones/{zone}' was not found")
        return self.zones[zone]

    def _validated(self, place: Zone, body: dict) -> tuple[str, dict[str, int]]:
        machine = str(body.get("machineType") or "").rsplit("/", 1)[-1]
        if machine not in place.machine_types:
            raise FakeError(400, "invalid", f"Invalid value for field 'resource.machineType': "
                            f"'{body.get('machineType')}'. Machine type with name '{machine}' does not exist in "
                            f"zone '{place.name}'.")
        gpus = dict([MACHINE_TYPES[machine][2]]) if MACHINE_TYPES[machine][2] else {}
        for accel in body.get("guestAccelerators") or []:
            kind = str(accel.get("acceleratorType", "")).rsplit("/", 1)[-1]
            if kind not in place.accelerators:
                raise FakeError(400, "invalid", f"Invalid value for field 'resource.guestAccelerators[0]"
                                f".acceleratorType': '{kind}'. Accelerator type does not exist in zone.")
            gpus[kind] = gpus.get(kind, 0) + int(accel.get("acceleratorCount", 0))
        if gpus and (body.get("scheduling") or {}).get("onHostMaintenance") != "TERMINATE":
            raise FakeError(400, "invalid", "Instances with guest accelerators do not support live migration.")
        return machine, gpus

    def _outcome(self, place: Zone, gpus: dict[str, int], body: dict) -> tuple[str, str] | None:
        """The error the insert's operation will carry when DONE, or None (and the GPUs are taken)."""
        if place.op_errors:
            return place.op_errors.pop(0)
        if any(place.free.get(kind, count) < count for kind, count in gpus.items()):
            return ("ZONE_RESOURCE_POOL_EXHAUSTED", f"The zone 'projects/{self.project}/zones/{place.name}' does "
                    "not have enough resources available to fulfill the request.  Try a different zone, or try "
                    "again later.")
        quota = self._quota_error(place, gpus, body)
        if quota is None:
            for kind, count in gpus.items():
                if kind in place.free:
                    place.free[kind] -= count
        return quota

    def _quota_error(self, place: Zone, gpus: dict[str, int], body: dict) -> tuple[str, str] | None:
        spot = (body.get("scheduling") or {}).get("provisioningModel") == "SPOT"
        wanted = sum(gpus.values())
        used_all = sum(sum(i["gpus"].values()) for i in self.instances.values() if i["holding"])
        if ("global", "GPUS_ALL_REGIONS") in self.quotas and used_all + wanted > self.quotas["global",
                                                                                            "GPUS_ALL_REGIONS"]:
            limit = self.quotas["global", "GPUS_ALL_REGIONS"]
            return "QUOTA_EXCEEDED", f"Quota 'GPUS_ALL_REGIONS' exceeded.  Limit: {limit} globally."
        for kind, count in gpus.items():
            metric = ("PREEMPTIBLE_" if spot else "") + ACCELERATOR_TYPES[kind][2]
            limit = self.quotas.get((place.region, metric))
            used = sum(i["gpus"].get(kind, 0) for i in self.instances.values()
                       if i["zone"].startswith(place.region + "-") and i["holding"])
            if limit is not None and used + count > limit:
                return "QUOTA_EXCEEDED", f"Quota '{metric}' exceeded.  Limit: {limit} in region {place.region}."
        return None

    def _release(self, inst: dict) -> None:
        """Give an instance's GPUs back to its zone (once) and stop counting them against quotas."""
        if inst["holding"]:
            place = self.zones[inst["zone"]]
            for kind, count in inst["gpus"].items():
                if kind in place.free:
                    place.free[kind] += count
            inst["holding"] = False
