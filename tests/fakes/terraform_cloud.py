"""A small cloud for the Terraform provider's tests, served on loopback, driven by tests/fakes/terraform_module.

The module reaches it only through Terraform's built-ins: `local-exec` provisioners calling its REST API with curl
(create, attach an address, delete) and a `terraform_remote_state` data source reading an instance's description
through Terraform's `http` backend (Terraform state format version 4, the published outputs in it). Its API:

    POST   /v1/instances                  {name, booking_id, gpu, gpu_count, region, spot, user_data,
                                           ssh_public_key} → 201 {id, name, status}; the same name again → 200
                                           (idempotent, like EC2's ClientToken); a refusal → {"error": {code,
                                           message}} with the status a cloud gives it
    POST   /v1/instances/{name}/address   attach the public address (`hold_address` makes it hang)
    GET    /v1/instances/{name}/tfstate   the instance as a state document; 404 when unknown
    DELETE /v1/instances/{name}           204; 404 when unknown (the module treats that as done)

Bearer auth on the API and Basic auth (any user, the token as password) on the state, both with `token`.
Instances boot `provisioning` (no address published) → `booting` (address, not ready) → `running`: at once, or
one step per `advance(name)` when `slow_boot` is set.
"""

from __future__ import annotations

import base64
import itertools
import threading
from dataclasses import dataclass

from tests.fakes.server import FakeVendor, Request

__all__ = ["CAPACITY", "FakeTerraformCloud", "Machine"]

PHASES = ("provisioning", "booting", "running")
CAPACITY = (503, "InsufficientInstanceCapacity",
            "We currently do not have sufficient capacity in the Availability Zone you requested.")
INVALID = (400, "InvalidParameterValue", "Value (v100) for parameter gpu is invalid: not sold in this region.")
DELETE_FAILED = (500, "InternalError", "An internal error has occurred while deleting the instance.")
HOLD_LIMIT = 30.0  # seconds an address request may hang before the fake lets it go anyway


@dataclass
class Machine:
    """One instance of the fake cloud."""

    id: str
    name: str
    request: dict
    phase: str = "running"
    address: str | None = None
    deleted: bool = False


@dataclass
class _Refusal:
    status: int
    code: str
    message: str


class FakeTerraformCloud(FakeVendor):
    """The fake cloud (see the module docstring); its knobs are the public attributes."""

    def __init__(self, token: str = "cloud-token-5c1d8e0f") -> None:
        super().__init__()
        self.token = token
        self.slow_boot = False
        self.ssh_port = 22
        self.gate = 1  # a create waits (up to gate_wait s) until this many creates are in flight: applies overlap
        self.gate_wait = 10.0
        self.refusals: list[_Refusal] = []
        self.sold_out = False  # while set, every create is refused for capacity
        self.refusing: tuple[int, str, str] | None = None  # while set, every create is refused with it
        self.failing_deletes = 0
        self.hold_address = False
        self.machines: dict[str, Machine] = {}
        self.in_flight = self.max_in_flight = 0
        self.address_requested = threading.Event()
        self.released = threading.Event()
        self._arrived = threading.Condition(self.lock)
        self._ids = itertools.count(1)
        self.route("POST", r"/v1/instances", self._create)
        self.route("POST", r"/v1/instances/([^/]+)/address", self._attach)
        self.route("GET", r"/v1/instances/([^/]+)/tfstate", self._state)
        self.route("DELETE", r"/v1/instances/([^/]+)", self._delete)

    # -- knobs ------------------------------------------------------------------------------------------------
    def refuse_next(self, refusal: tuple[int, str, str] = CAPACITY) -> None:
        """The next create is refused with (status, code, message)."""
        self.refusals.append(_Refusal(*refusal))

    def advance(self, name: str) -> str:
        """Move a slow-booting instance to its next phase; returns the phase."""
        with self.lock:
            machine = self.machines[name]
            machine.phase = PHASES[min(PHASES.index(machine.phase) + 1, len(PHASES) - 1)]
            return machine.phase

    def live(self) -> list[str]:
        """Names of the instances not deleted."""
        with self.lock:
            return sorted(name for name, m in self.machines.items() if not m.deleted)

    # -- the API ------------------------------------------------------------------------------------------------
    def _create(self, request: Request) -> tuple:
        if not self._authorised(request):
            return _error(401, "AuthFailure", "The bearer token is not valid.")
        body = request.json() or {}
        with self.lock:
            if self.refusals or self.sold_out or self.refusing:
                refusal = self.refusals.pop(0) if self.refusals else _Refusal(*(self.refusing or CAPACITY))
                return _error(refusal.status, refusal.code, refusal.message)
            known = self.machines.get(body.get("name", ""))
            if known is not None and not known.deleted:
                return 200, _public(known)
            machine = Machine(f"fc-{next(self._ids):05d}", body["name"], body,
                              phase=PHASES[0] if self.slow_boot else PHASES[-1])
            self.machines[machine.name] = machine
        self._wait_for_company()
        return 201, _public(machine)

    def _wait_for_company(self) -> None:
        """Hold a create until `gate` creates are in flight (or `gate_wait` s passed), counting the overlap."""
        with self._arrived:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._arrived.notify_all()
            self._arrived.wait_for(lambda: self.max_in_flight >= self.gate, timeout=self.gate_wait)
            self.in_flight -= 1

    def _attach(self, request: Request) -> tuple:
        if not self._authorised(request):
            return _error(401, "AuthFailure", "The bearer token is not valid.")
        self.address_requested.set()
        if self.hold_address:
            self.released.wait(HOLD_LIMIT)
        with self.lock:
            machine = self.machines.get(request.match.group(1))
            if machine is None or machine.deleted:
                return _error(404, "InvalidInstanceID.NotFound", "The instance does not exist.")
            machine.address = machine.address or f"203.0.113.{len(self.machines) % 250 + 1}"
            return 200, _public(machine)

    def _state(self, request: Request) -> tuple:
        if not self._authorised(request):
            return 401, {"error": "unauthorised"}
        with self.lock:
            machine = self.machines.get(request.match.group(1))
            if machine is None or machine.deleted:
                return 404, {"error": "no such instance"}
            return 200, self._state_document(machine)

    def _state_document(self, machine: Machine) -> dict:
        published = machine.address if machine.phase != "provisioning" else None
        outputs = {"instance_id": machine.id, "ssh_host": published or "", "ssh_user": "ubuntu",
                   "ssh_port": self.ssh_port, "ready": machine.phase == "running" and published is not None,
                   "phase": machine.phase}
        return {"version": 4, "terraform_version": "1.15.5", "serial": 1, "lineage": f"fake-{machine.id}",
                "outputs": {k: {"value": v, "type": _type(v)} for k, v in outputs.items()}, "resources": []}

    def _delete(self, request: Request) -> tuple:
        if not self._authorised(request):
            return _error(401, "AuthFailure", "The bearer token is not valid.")
        with self.lock:
            machine = self.machines.get(request.match.group(1))
            if machine is None or machine.deleted:
                return _error(404, "InvalidInstanceID.NotFound", "The instance does not exist.")
            if self.failing_deletes:
                self.failing_deletes -= 1
                return _error(*DELETE_FAILED)
            machine.deleted = True
        return 204, None

    def _authorised(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        if header == f"Bearer {self.token}":
            return True
        if header.startswith("Basic "):
            return base64.b64decode(header[6:]).decode(errors="replace").partition(":")[2] == self.token
        return False


def _public(machine: Machine) -> dict:
    return {"id": machine.id, "name": machine.name, "status": machine.phase, "address": machine.address}


def _error(status: int, code: str, message: str) -> tuple:
    return status, {"error": {"code": code, "message": message}}


def _type(value: object) -> str:
    return "bool" if isinstance(value, bool) else "number" if isinstance(value, int) else "string"
