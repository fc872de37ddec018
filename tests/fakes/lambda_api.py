"""A faithful fake of the Lambda Cloud API v1 (spec providers.md §2, lambda_openapi.json), served on loopback.

Serves the real paths under `/api/v1` (point the adapter at `f"{fake.url}/api/v1"`), the `{"data": …}` and
`{"error": {"code", "message", "suggestion"?}}` envelopes, Bearer (or Basic `<key>:`) auth, the account-wide
launch rate limit (one launch per `launch_window` seconds, 429 otherwise; the 429 body is not documented [I]),
optionally the account-wide request limit (`request_window`: any two requests closer than that get a 429; off by
default, on in the pacing tests), 404s as Lambda tells them apart (`global/object-does-not-exist` for an
instance it does not know, `global/not-found` for a path it does not serve), instances that boot by the clock
(`booting` without an IP for `boot_time`, then `active` with `ip`; or at once on `activate()`), and termination.
Every instance's run time is recorded in `runs` with the injectable `clock`, for billing checks. The fake keeps
each launch's `user_data` (write-only in the API); `run_user_data(id)` applies it on a tests.fakes.machine.Machine
the way cloud-init would.
"""

from __future__ import annotations

import base64
import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from tests.fakes.cloud_init import run_user_data
from tests.fakes.machine import Machine
from tests.fakes.server import FakeVendor, Handler, Request

__all__ = ["DEFAULT_TYPES", "REGIONS", "FakeLambda", "Run"]

REGIONS = {"us-west-1": "California, USA", "us-east-1": "Virginia, USA", "us-south-1": "Texas, USA"}
# name: (price_cents_per_hour, gpus, gpu_description); prices from spec §8
DEFAULT_TYPES = {
    "gpu_1x_a100_sxm4": (199, 1, "A100 (40 GB SXM4)"),
    "gpu_8x_a100_80gb_sxm4": (2232, 8, "A100 (80 GB SXM4)"),
    "gpu_1x_h100_pcie": (329, 1, "H100 (80 GB PCIe)"),
    "gpu_8x_h100_sxm5": (3192, 8, "H100 (80 GB SXM5)"),
    "gpu_1x_a10": (129, 1, "A10 (24 GB PCIe)"),
    "gpu_8x_v100": (632, 8, "Tesla V100 (16 GB)"),
}
ERRORS = {
    "capacity": (400, "instance-operations/launch/insufficient-capacity",
                 "Not enough capacity to fulfill launch request.", None),
    "quota": (400, "global/quota-exceeded", "Quota exceeded.", "Contact Support to increase your quota."),
    "invalid": (400, "global/invalid-parameters", "Invalid request data.", None),
    "auth": (401, "global/invalid-api-key", "API key was invalid, expired, or deleted.",
             "Check your API key or create a new one, then try again."),
    "inactive": (403, "global/account-inactive", "Your account is inactive.",
                 "Make sure you have verified your email address and have a valid payment method."),
    "missing": (404, "global/object-does-not-exist", "Specified instance does not exist.", None),
    "launch_missing": (404, "global/object-does-not-exist", "Specified resource does not exist.",
                       "Check the name and try again."),
    "rate": (429, "global/too-many-requests", "Too many requests.", "Try again shortly."),  # [I]
    "wrong_route": (404, "global/not-found", "The requested resource was not found.", None),
}


def lambda_error(kind: str, message: str | None = None) -> tuple[int, dict]:
    """(status, body) of one of Lambda's documented errors."""
    status, code, default, suggestion = ERRORS[kind]
    error = {"code": code, "message": message or default}
    if suggestion:
        error["suggestion"] = suggestion
    return status, {"error": error}


def _instance_type(name: str, cents: int, gpus: int, description: str) -> dict:
    return {"name": name, "description": f"{gpus}x {description}", "gpu_description": description,
            "price_cents_per_hour": cents,
            "specs": {"vcpus": 30 * gpus, "memory_gib": 200 * gpus, "storage_gib": 1400 * gpus, "gpus": gpus}}


@dataclass
class Run:
    """When an instance started and stopped billing."""

    instance_id: str
    launched_at: datetime
    terminated_at: datetime | None = None
    name: str = ""

    def seconds(self, now: datetime) -> float:
        """Billed seconds so far."""
        return ((self.terminated_at or now) - self.launched_at).total_seconds()


class FakeLambda(FakeVendor):
    """In-memory Lambda Cloud with capacity per type and region."""

    def __init__(self, api_key: str = "lambda-test-key", *, clock: Callable[[], datetime] | None = None,
                 launch_window: float = 12.0, boot_time: timedelta = timedelta(seconds=2),
                 request_window: float = 0.0) -> None:
        super().__init__()
        self.api_key = api_key
        self.machines: list[Machine] = []
        self.reset(clock=clock, launch_window=launch_window, boot_time=boot_time, request_window=request_window)

    def reset(self, *, clock: Callable[[], datetime] | None = None, launch_window: float = 12.0,
              boot_time: timedelta = timedelta(seconds=2), request_window: float = 0.0) -> None:
        """Back to a fresh account: default types with capacity everywhere, no instances, faults or requests."""
        with self.lock:
            self.routes, self.requests, self.faults = [], [], []
            self.clock = clock or (lambda: datetime.now(UTC))
            self.launch_window, self.boot_time, self.request_window = launch_window, boot_time, request_window
            self._last_request: datetime | None = None
            for machine in self.machines:
                machine.remove()
            self.machines = []
            self.types = {name: _instance_type(name, cents, n, desc)
                          for name, (cents, n, desc) in DEFAULT_TYPES.items()}
            self.capacity: dict[str, set[str]] = {name: set(REGIONS) for name in self.types}
            self.ssh_keys = {"gpubot"}
            self.instances: dict[str, dict] = {}
            self.runs: dict[str, Run] = {}
            self.quota_exceeded = self.account_inactive = False
            self._last_launch: datetime | None = None
            self._ips = itertools.count(2)
            self._routes()

    def _routes(self) -> None:
        for method, path, handler in (
            ("GET", r"/api/v1/instance-types", self._instance_types),
            ("POST", r"/api/v1/instance-operations/launch", self._launch),
            ("POST", r"/api/v1/instance-operations/terminate", self._terminate),
            ("GET", r"/api/v1/instances", self._list),
            ("GET", r"/api/v1/instances/(?P<id>[^/]+)", self._get),
        ):
            self.route(method, path, self._authorized(handler))

    # -- control ------------------------------------------------------------------------------------------
    def set_capacity(self, type_name: str, regions: list[str] | set[str]) -> None:
        """Regions where `type_name` can be launched now (empty: sold out everywhere)."""
        with self.lock:
            self.capacity[type_name] = set(regions)

    def activate(self, instance_id: str) -> None:
        """Finish booting now: status active with a public IP."""
        with self.lock:
            self.instances[instance_id].update(status="active", ip=f"198.51.100.{next(self._ips)}")

    def run_user_data(self, instance_id: str, machine: Machine | None = None) -> Machine:
        """Boot-time cloud-init: apply the instance's user data on a machine (removed by `stop`/`reset`)."""
        machine = machine or Machine()
        self.machines.append(machine)
        run_user_data(machine, self.instances[instance_id]["user_data"])
        return machine

    def stop(self) -> None:
        """Stop serving and remove the machines user data ran on."""
        super().stop()
        for machine in self.machines:
            machine.remove()

    def preempt(self, instance_id: str) -> None:
        """Lambda takes the instance back: status `preempted` (spec §2), no longer billed."""
        with self.lock:
            self.instances[instance_id]["status"] = "preempted"
            self.runs[instance_id].terminated_at = self.clock()

    def billed_seconds(self, instance_id: str) -> float:
        """Run time of an instance from launch to termination (or now)."""
        return self.runs[instance_id].seconds(self.clock())

    # -- handlers -----------------------------------------------------------------------------------------
    def _authorized(self, handler: Handler) -> Handler:
        def check(request: Request) -> tuple:
            header = request.headers.get("authorization", "")
            basic = "Basic " + base64.b64encode(f"{self.api_key}:".encode()).decode()
            if header not in (f"Bearer {self.api_key}", basic):
                return lambda_error("auth")
            if self.account_inactive:
                return lambda_error("inactive")
            with self.lock:
                return self._too_fast() or handler(request)
        return check

    def _too_fast(self) -> tuple | None:
        """429 when this request follows the previous one by less than `request_window` seconds."""
        now, last = self.clock(), self._last_request
        self._last_request = now
        if self.request_window and last is not None and (now - last).total_seconds() < self.request_window:
            return lambda_error("rate")
        return None

    def unrouted(self, request: Request) -> tuple:
        """Lambda's answer to a path it does not serve."""
        return lambda_error("wrong_route")

    def _instance_types(self, request: Request) -> tuple:
        return 200, {"data": {name: {"instance_type": itype, "regions_with_capacity_available": [
            {"name": r, "description": REGIONS[r]} for r in sorted(self.capacity.get(name, ()))]}
            for name, itype in self.types.items()}}

    def _launch(self, request: Request) -> tuple:
        now = self.clock()
        if self._last_launch and (now - self._last_launch).total_seconds() < self.launch_window:
            return lambda_error("rate")
        self._last_launch = now
        try:
            body = request.json()
        except ValueError:
            return lambda_error("invalid")
        problem = self._launch_problem(body)
        return problem or (200, {"data": {"instance_ids": [self._create(body, now)]}})

    def _launch_problem(self, body: object) -> tuple | None:
        if not isinstance(body, dict) or not all(isinstance(body.get(k), str)
                                                 for k in ("region_name", "instance_type_name")):
            return lambda_error("invalid", "region_name and instance_type_name are required.")
        keys, name = body.get("ssh_key_names"), body.get("name", "")
        if not isinstance(keys, list) or len(keys) != 1 or not isinstance(name, str) or len(name) > 64:
            return lambda_error("invalid")
        if keys[0] not in self.ssh_keys or body["instance_type_name"] not in self.types \
                or body["region_name"] not in REGIONS:
            return lambda_error("launch_missing")
        if self.quota_exceeded:
            return lambda_error("quota")
        if body["region_name"] not in self.capacity.get(body["instance_type_name"], ()):
            return lambda_error("capacity")
        return None

    def _create(self, body: dict, now: datetime) -> str:
        instance_id = uuid.uuid4().hex
        region = body["region_name"]
        self.instances[instance_id] = {
            "id": instance_id, "name": body.get("name", ""), "status": "booting",
            "ssh_key_names": body["ssh_key_names"], "file_system_names": [],
            "region": {"name": region, "description": REGIONS[region]},
            "instance_type": self.types[body["instance_type_name"]], "hostname": f"host-{instance_id[:8]}",
            "actions": {}, "tags": body.get("tags") or [], "user_data": body.get("user_data"),
        }
        self.runs[instance_id] = Run(instance_id, now, name=body.get("name", ""))
        return instance_id

    def _get(self, request: Request) -> tuple:
        instance = self._live(request.match["id"])
        if instance is None:
            return lambda_error("missing")
        return 200, {"data": self._public(self._booted(instance))}

    def _list(self, request: Request) -> tuple:
        live = [self._booted(i) for i in self.instances.values() if i["status"] != "terminated"]
        return 200, {"data": [self._public(i) for i in live]}

    def _booted(self, instance: dict) -> dict:
        """`booting` turns `active` with an IP once `boot_time` has passed since the launch."""
        if instance["status"] == "booting" and self.clock() - self.runs[instance["id"]].launched_at >= self.boot_time:
            self.activate(instance["id"])
        return instance

    def _terminate(self, request: Request) -> tuple:
        ids = (request.json() or {}).get("instance_ids")
        if not isinstance(ids, list) or not ids:
            return lambda_error("invalid")
        if any(self._live(i) is None for i in ids):
            return lambda_error("missing")
        done = []
        for instance_id in ids:
            self.instances[instance_id]["status"] = "terminated"
            run = self.runs[instance_id]
            run.terminated_at = run.terminated_at or self.clock()  # a preempted one stopped billing already
            done.append({**self._public(self.instances[instance_id]), "status": "terminating"})
        return 200, {"data": {"terminated_instances": done}}

    def _live(self, instance_id: str) -> dict | None:
        instance = self.instances.get(instance_id)
        return instance if instance and instance["status"] != "terminated" else None

    @staticmethod
    def _public(instance: dict) -> dict:
        """The instance as the API shows it (user_data is write-only; ip only once assigned)."""
        shown = {k: v for k, v in instance.items() if k != "user_data" and not (k == "ip" and v is None)}
        return {**shown, "actions": _actions(instance["status"])}


def _actions(status: str) -> dict:
    """Which instance actions Lambda offers in a status (InstanceActionAvailability; the reasons are its codes)."""
    reason = {"booting": "vm-has-not-launched", "terminating": "vm-is-terminating",
              "terminated": "vm-is-terminating"}.get(status)
    offered = {action: {"available": reason is None} | ({"reason_code": reason} if reason else {})
               for action in ("migrate", "rebuild", "restart", "cold_reboot")}
    return {**offered, "terminate": {"available": status not in ("terminating", "terminated")}}
