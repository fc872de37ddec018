"""A faithful fake of the Compute Engine REST API v1 on loopback, for google-cloud-compute's REST transport.

Point the client at it with `client_options={"api_endpoint": fake.url}` and anonymous credentials. It serves the
real paths under `/compute/v1/projects/{project}/zones/{zone}/…`: zones, machineTypes and acceleratorTypes (list
and get), instances (insert, get, list, delete, and the project-wide aggregated list), zone operations (get, list,
wait). Lists honour `maxResults`
(capped by `page_size`, so small lists paginate too), `pageToken`/`nextPageToken` and the `filter` expressions
`field = "v"`, `field != "v"`, `field:*` and `field:"v"` joined with AND (e.g. `labels.gpubot-booking:*`,
`operationType="compute.instances.preempted" AND targetLink="…"`); an empty list has no `items`. Errors use
Google's envelope `{"error": {"code", "message", "errors": [{"message", "domain", "reason"}]}}`. The state and
its timing (operations that finish later, booting, preemption, quotas) live in tests.fakes.gcp_world;
`run_startup_script(name)` runs a VM's `startup-script` for real on a tests.fakes.machine.Machine.

Not modelled [I]: the exact `httpErrorStatusCode` of failed operations (503 for capacity and 403 for quota are
what third-party reports show), zonal DNS names, disks and networks beyond echoing what the insert asked for.
Enums (an operation's `status`) are sent by name, as the API does when the client does not ask for numbers.
"""

from __future__ import annotations

import base64
import re
import time
from datetime import UTC, datetime
from typing import Any

from tests.fakes.gcp_world import ACCELERATOR_TYPES, MACHINE_TYPES, FakeError, GcpWorld, Zone
from tests.fakes.machine import Machine
from tests.fakes.server import FakeVendor, Handler, Request

__all__ = ["FakeGcp", "Zone"]

_BASE = r"/compute/v1/projects/(?P<project>[^/]+)"
_ZONE = _BASE + r"/zones/(?P<zone>[^/]+)"
_NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
_LABEL_KEY, _LABEL_VALUE = re.compile(r"[a-z][a-z0-9_-]{0,62}"), re.compile(r"[a-z0-9_-]{0,63}")
_TERM = re.compile(r'\(?\s*([\w.\-]+)\s*(!=|=|:)\s*("([^"]*)"|(\S+?))\s*\)?')
_OP_HTTP = {"ZONE_RESOURCE_POOL_EXHAUSTED": (503, "SERVICE UNAVAILABLE"), "QUOTA_EXCEEDED": (403, "FORBIDDEN")}


class FakeGcp(FakeVendor):
    """One project's Compute Engine on 127.0.0.1."""

    def __init__(self, project: str = "gpubot-test", zones: list[str] | None = None, *, page_size: int = 500,
                 wait_cap: float = 1.0, token: str | None = None, **timing: Any) -> None:
        super().__init__()
        names = zones or ["us-central1-a", "us-central1-b", "us-east1-b"]
        self.world = GcpWorld(project, [Zone(name) for name in names], **timing)
        self.page_size, self.wait_cap, self.token = page_size, wait_cap, token
        self.machines: list[Machine] = []
        self.link = f"https://www.googleapis.com/compute/v1/projects/{project}"
        for method, path, handler in (
                ("GET", _BASE + "/zones", self._zones), ("GET", _ZONE, self._zone),
                ("GET", _ZONE + "/machineTypes", self._machine_types),
                ("GET", _ZONE + r"/machineTypes/(?P<name>[^/]+)", self._machine_type),
                ("GET", _ZONE + "/acceleratorTypes", self._accelerator_types),
                ("GET", _ZONE + r"/acceleratorTypes/(?P<name>[^/]+)", self._accelerator_type),
                ("POST", _ZONE + "/instances", self._insert), ("GET", _ZONE + "/instances", self._instances),
                ("GET", _BASE + "/aggregated/instances", self._aggregated_instances),
                ("GET", _ZONE + r"/instances/(?P<name>[^/]+)", self._instance),
                ("DELETE", _ZONE + r"/instances/(?P<name>[^/]+)", self._delete),
                ("GET", _ZONE + "/operations", self._operations),
                ("GET", _ZONE + r"/operations/(?P<name>[^/]+)", self._operation),
                ("POST", _ZONE + r"/operations/(?P<name>[^/]+)/wait", self._wait)):
            self.route(method, path, self._guarded(handler))

    # -- test controls ------------------------------------------------------------------------------------
    def zone(self, name: str) -> Zone:
        """A zone, to change what it sells or queue faults on it."""
        return self.world.zones[name]

    def preempt(self, name: str) -> None:
        """Preempt the Spot VM called `name`, wherever it runs."""
        inst = next(i for i in self.world.live() if i["name"] == name)
        self.world.preempt(inst["zone"], name)

    def live_names(self) -> set[str]:
        """Names of the instances that exist now."""
        return {i["name"] for i in self.world.live()}

    def run_startup_script(self, name: str, machine: Machine | None = None) -> Machine:
        """Boot the VM `name` on a machine the way Google's guest environment does: run the `startup-script`
        metadata value with bash, as root (the machine is removed by `stop`)."""
        inst = next(i for i in self.world.live() if i["name"] == name)
        items = {i["key"]: i["value"] for i in (inst["body"].get("metadata") or {}).get("items") or []}
        machine = machine or Machine()
        self.machines.append(machine)
        script = machine.root / "var/run/google.startup.script"
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(items["startup-script"])
        machine.run(["bash", str(script)])
        return machine

    def stop(self) -> None:
        """Stop serving and remove the machines startup scripts ran on."""
        super().stop()
        for machine in self.machines:
            machine.remove()
        self.machines = []

    # -- plumbing -------------------------------------------------------------------------------------------
    def _guarded(self, handler: Handler) -> Handler:
        def serve(request: Request) -> tuple:
            if self.token and request.headers.get("authorization") != f"Bearer {self.token}":
                return _error(FakeError(401, "required", "Request is missing required authentication "
                                        "credential. Expected OAuth 2 access token."))
            if request.match["project"] != self.world.project:
                return _error(FakeError(404, "notFound",
                                        f"The resource 'projects/{request.match['project']}' was not found"))
            try:
                return 200, handler(request)
            except FakeError as exc:
                return _error(exc)
        return serve

    def _page(self, request: Request, kind: str, items: list[dict], self_link: str) -> dict:
        items = [i for i in items if _matches(i, _query(request, "filter"))]
        size = min(int(_query(request, "maxResults") or 500), 500, self.page_size)
        start = _offset(_query(request, "pageToken"))
        page: dict[str, Any] = {"kind": kind, "id": self_link.removeprefix("https://www.googleapis.com/compute/v1/"),
                                "selfLink": self_link}
        if items[start:start + size]:
            page["items"] = items[start:start + size]
        if start + size < len(items):
            page["nextPageToken"] = base64.urlsafe_b64encode(f"o:{start + size}".encode()).decode()
        return page

    # -- zones and catalogs -----------------------------------------------------------------------------------
    def _zone_json(self, zone: Zone) -> dict:
        return {"kind": "compute#zone", "id": str(2000 + sorted(self.world.zones).index(zone.name)),
                "name": zone.name, "description": zone.name, "status": "UP", "selfLink": f"{self.link}/zones/"
                f"{zone.name}", "region": f"{self.link}/regions/{zone.region}", "availableCpuPlatforms": []}

    def _zones(self, request: Request) -> dict:
        items = [self._zone_json(z) for z in self.world.zones.values()]
        return self._page(request, "compute#zoneList", items, f"{self.link}/zones")

    def _zone(self, request: Request) -> dict:
        return self._zone_json(self.world._zone(request.match["zone"]))

    def _machine_type_json(self, zone: str, name: str) -> dict:
        cpus, memory, bundled = MACHINE_TYPES[name]
        item = {"kind": "compute#machineType", "id": str(abs(hash(name)) % 10**9), "name": name,
                "description": f"{cpus} vCPUs, {memory / 1024:g} GB RAM", "guestCpus": cpus, "memoryMb": memory,
                "maximumPersistentDisks": 128, "maximumPersistentDisksSizeGb": "263168", "zone": zone,
                "isSharedCpu": False, "selfLink": f"{self.link}/zones/{zone}/machineTypes/{name}"}
        if bundled:
            item["accelerators"] = [{"guestAcceleratorType": bundled[0], "guestAcceleratorCount": bundled[1]}]
        return item

    def _machine_types(self, request: Request) -> dict:
        zone = self.world._zone(request.match["zone"])
        items = [self._machine_type_json(zone.name, n) for n in sorted(zone.machine_types)]
        return self._page(request, "compute#machineTypeList", items, f"{self.link}/zones/{zone.name}/machineTypes")

    def _machine_type(self, request: Request) -> dict:
        zone, name = self.world._zone(request.match["zone"]), request.match["name"]
        if name not in zone.machine_types:
            raise FakeError(404, "notFound", f"The resource 'projects/{self.world.project}/zones/{zone.name}/"
                            f"machineTypes/{name}' was not found")
        return self._machine_type_json(zone.name, name)

    def _accelerator_json(self, zone: str, name: str) -> dict:
        description, cards, _ = ACCELERATOR_TYPES[name]
        return {"kind": "compute#acceleratorType", "id": str(10000 + sorted(ACCELERATOR_TYPES).index(name)),
                "creationTimestamp": "1969-12-31T16:00:00.000-08:00", "name": name, "description": description,
                "zone": f"{self.link}/zones/{zone}", "maximumCardsPerInstance": cards,
                "selfLink": f"{self.link}/zones/{zone}/acceleratorTypes/{name}"}

    def _accelerator_types(self, request: Request) -> dict:
        zone = self.world._zone(request.match["zone"])
        items = [self._accelerator_json(zone.name, n) for n in sorted(zone.accelerators)]
        return self._page(request, "compute#acceleratorTypeList", items,
                          f"{self.link}/zones/{zone.name}/acceleratorTypes")

    def _accelerator_type(self, request: Request) -> dict:
        zone, name = self.world._zone(request.match["zone"]), request.match["name"]
        if name not in zone.accelerators:
            raise FakeError(404, "notFound", f"The resource 'acceleratorTypes/{name}' was not found")
        return self._accelerator_json(zone.name, name)

    # -- instances ----------------------------------------------------------------------------------------------
    def _insert(self, request: Request) -> dict:
        body = request.json() or {}
        if not _NAME.fullmatch(str(body.get("name") or "")):
            raise FakeError(400, "invalid", f"Invalid value for field 'resource.name': '{body.get('name')}'. Must "
                            "be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?|[1-9][0-9]{0,19})'")
        for key, value in (body.get("labels") or {}).items():
            if not (_LABEL_KEY.fullmatch(key) and _LABEL_VALUE.fullmatch(str(value))):
                raise FakeError(400, "invalid", f"Invalid value for field 'resource.labels': '{key}'")
        zone = request.match["zone"]
        return self._operation_json(zone, self.world.insert(zone, body, _query(request, "requestId")))

    def _instance_json(self, inst: dict, now: float) -> dict:
        body, zone, status = inst["body"], inst["zone"], self.world.status(inst, now)
        nat = [{"type": "ONE_TO_ONE_NAT", "name": "External NAT", "networkTier": "PREMIUM",
                **({"natIP": inst["nat_ip"]} if status == "RUNNING" else {})}]
        accelerators = [{"acceleratorType": f"{self.link}/zones/{zone}/acceleratorTypes/{kind}",
                         "acceleratorCount": count} for kind, count in inst["gpus"].items()]
        return {"kind": "compute#instance", "id": inst["id"], "name": inst["name"], "status": status,
                "creationTimestamp": _stamp(inst["created"], self.world.clock()), "zone": f"{self.link}/zones/{zone}",
                "machineType": f"{self.link}/zones/{zone}/machineTypes/{inst['machine_type']}",
                "labels": body.get("labels") or {}, "labelFingerprint": "42WmSpB8rSM=",
                "metadata": {"kind": "compute#metadata", "fingerprint": "x7nGoEu7ZwE=", **(body.get("metadata") or {})},
                "scheduling": body.get("scheduling") or {}, "guestAccelerators": accelerators,
                "networkInterfaces": [{"kind": "compute#networkInterface", "name": "nic0", "networkIP": inst["ip"],
                                       "network": f"{self.link}/global/networks/default", "accessConfigs": nat}],
                "disks": [{"kind": "compute#attachedDisk", "boot": True, "autoDelete": True, "index": 0}],
                "selfLink": f"{self.link}/zones/{zone}/instances/{inst['name']}"}

    def _instance(self, request: Request) -> dict:
        now = self.world.tick()
        return self._instance_json(self.world.instance(request.match["zone"], request.match["name"]), now)

    def _instances(self, request: Request) -> dict:
        zone = self.world._zone(request.match["zone"]).name
        now = self.world.tick()
        with self.world.lock:
            items = [self._instance_json(i, now) for i in self.world.instances.values() if i["zone"] == zone]
        return self._page(request, "compute#instanceList", items, f"{self.link}/zones/{zone}/instances")

    def _aggregated_instances(self, request: Request) -> dict:
        """Every zone's instances, paginated across zones; a zone with none on the page carries a warning."""
        now = self.world.tick()
        with self.world.lock:
            items = [self._instance_json(i, now) for i in sorted(self.world.instances.values(),
                                                                  key=lambda i: (i["zone"], i["created"]))]
        page = self._page(request, "compute#instanceAggregatedList", items, f"{self.link}/aggregated/instances")
        scoped: dict[str, dict] = {f"zones/{zone}": {"warning": {
            "code": "NO_RESULTS_ON_PAGE", "message": f"There are no results for scope 'zones/{zone}' on this page.",
            "data": [{"key": "scope", "value": f"zones/{zone}"}]}} for zone in sorted(self.world.zones)}
        for item in page.pop("items", []):
            scoped[f"zones/{item['zone'].rsplit('/', 1)[-1]}"].setdefault("instances", []).append(item)
            scoped[f"zones/{item['zone'].rsplit('/', 1)[-1]}"].pop("warning", None)
        return {**page, "items": scoped}

    def _delete(self, request: Request) -> dict:
        zone = request.match["zone"]
        return self._operation_json(zone, self.world.delete(zone, request.match["name"]))

    # -- operations ---------------------------------------------------------------------------------------------
    def _operation_json(self, zone: str, op: dict) -> dict:
        now = self.world.clock()
        target = self.world.instances.get((zone, op["target"]))
        done = op["status"] == "DONE"
        item = {"kind": "compute#operation", "id": op["id"], "name": op["name"], "operationType": op["type"],
                "zone": f"{self.link}/zones/{zone}", "targetLink": f"{self.link}/zones/{zone}/instances/{op['target']}",
                "status": op["status"], "progress": 100 if done else 0, "user": op["user"],
                "insertTime": _stamp(op["created"], now), "startTime": _stamp(op["created"], now),
                "selfLink": f"{self.link}/zones/{zone}/operations/{op['name']}"}
        if target is not None:
            item["targetId"] = target["id"]
        if op.get("statusMessage"):
            item["statusMessage"] = op["statusMessage"]
        if done:
            item["endTime"] = _stamp(op["done_at"], now)
        if done and op.get("error"):
            code, message = op["error"]
            item["error"] = {"errors": [{"code": code, "message": message}]}
            item["httpErrorStatusCode"], item["httpErrorMessage"] = _OP_HTTP.get(code, (400, "BAD REQUEST"))
        return item

    def _operation(self, request: Request) -> dict:
        zone = request.match["zone"]
        return self._operation_json(zone, self.world.operation(zone, request.match["name"]))

    def _operations(self, request: Request) -> dict:
        zone = self.world._zone(request.match["zone"]).name
        self.world.tick()
        with self.world.lock:
            items = [self._operation_json(z, op) for (z, _), op in self.world.operations.items() if z == zone]
        return self._page(request, "compute#operationList", items, f"{self.link}/zones/{zone}/operations")

    def _wait(self, request: Request) -> dict:
        """Block until the operation is DONE or `wait_cap` seconds passed (Google: about 2 minutes)."""
        zone, name = request.match["zone"], request.match["name"]
        deadline = time.monotonic() + self.wait_cap
        while self.world.operation(zone, name)["status"] != "DONE" and time.monotonic() < deadline:
            time.sleep(0.02)
        return self._operation_json(zone, self.world.operation(zone, name))


def _error(exc: FakeError) -> tuple[int, dict]:
    domain = "usageLimits" if exc.reason in ("quotaExceeded", "rateLimitExceeded") else "global"
    return exc.status, {"error": {"code": exc.status, "message": exc.message,
                                  "errors": [{"message": exc.message, "domain": domain, "reason": exc.reason}]}}


def _query(request: Request, key: str) -> str | None:
    values = request.query.get(key)
    return values[0] if values else None


def _offset(token: str | None) -> int:
    if not token:
        return 0
    try:
        return int(base64.urlsafe_b64decode(token.encode()).decode().removeprefix("o:"))
    except ValueError:
        raise FakeError(400, "invalid", "Invalid value for field 'pageToken'") from None


def _matches(item: dict, expression: str | None) -> bool:
    """Whether a resource passes a list filter (the subset of Google's syntax described above)."""
    if not expression:
        return True
    for term in re.split(r"\s+AND\s+", expression.strip(), flags=re.IGNORECASE):
        match = _TERM.fullmatch(term.strip())
        if match is None:
            raise FakeError(400, "invalid", f"Invalid value for field 'filter': '{expression}'. Invalid list filter"
                            " expression.")
        field, op, value = match.group(1), match.group(2), match.group(4) or match.group(5) or ""
        found = _field(item, field)
        if op == ":" and value == "*":
            ok = found is not None
        elif op == ":":
            ok = found is not None and value in str(found)
        else:
            ok = (str(found) == value) == (op == "=")
        if not ok:
            return False
    return True


def _field(item: dict, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(item, dict) or part not in item:
            return None
        item = item[part]
    return item


def _stamp(at: float, now: float) -> str:
    """An RFC 3339 time for a clock reading (the world's clock is monotonic; the API shows wall time)."""
    return datetime.fromtimestamp(time.time() - (now - at), UTC).isoformat(timespec="milliseconds")
