"""A faithful fake of RunPod's REST v2 pods and catalog API (spec providers.md §3 and §10, runpod_v2_openapi.json),
served on loopback.

Serves `/v2/pods` and `/v2/catalog/gpus` (point the adapter at `f"{fake.url}/v2"`): create answers 201 with the
pod; DELETE removes it. Boot, by the clock: PROVISIONING for `provision_time`, then the container starts
(STARTING for `start_time`), then RUNNING (`runtime` present). `ssh.direct` appears only once the container
started sshd, which RunPod's official images do from their own start command, `/start.sh`; `args` *replaces*
that command (spec §10). With `run_commands` (the default) the fake runs the container for real on a
tests.fakes.machine.Machine: `shlex.split(args)` as argv (or `/start.sh` when `args` is empty), with the pod's
`env`, every `/start.sh` in the command mapped to the machine's stub, which marks sshd started. So a pod whose
command never runs `/start.sh` stays RUNNING without `ssh.direct` (the real API would publish the port, but
nothing would answer on it), and one whose command returns goes EXITED. Without `run_commands`, sshd counts
as started when `args` is empty or mentions `/start.sh`. `make_ready()` skips the wait.
A create is checked against the documented CreatePodRequest schema (tests/contracts; 422 "Request validation
failed." with one line per violation, as the vendor does), then placed on a host of `fleet`
(tests/fakes/runpod_catalog.py), which the catalog reports stock from. The create operation's error table:
400 "There are no longer any instances available…" when no host fits (or while `sold_out`, or the GPU id is in
`sold_out_gpus`: the catalog is not a reservation), 402 while `balance_exhausted`, 403 for a GPU id in
`denied_gpus`. Every error body is the documented problem+json (title, status, detail); the texts of 402 and 403
are not documented [I]. Run times are recorded in `runs` with `clock`.
"""

from __future__ import annotations

import itertools
import random
import shlex
import string
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from tests.contracts import contract_problems
from tests.fakes.lambda_api import Run
from tests.fakes.machine import Machine
from tests.fakes.runpod_catalog import GPU_TYPES, Host, catalog_gpus, default_fleet, fits, query_problem
from tests.fakes.server import FakeVendor, Handler, Request

__all__ = ["NO_CAPACITY", "FakeRunPod"]

NO_CAPACITY = {"detail": "There are no longer any instances available with the requested specifications. "
                         "Please refresh and try again.", "status": 400, "title": "Bad Request"}
NO_BALANCE = {"title": "Payment Required", "status": 402, "detail": "Insufficient balance to deploy this pod."}
NO_ACCESS = {"title": "Forbidden", "status": 403, "detail": "access denied"}
START_SH = "/start.sh"  # the start command of RunPod's official images; it starts sshd


def _invalid(*errors: str) -> tuple[int, dict]:
    return 422, {"detail": "Request validation failed.", "errors": list(errors), "status": 422,
                 "title": "Unprocessable Entity"}


def _problem(status: int, title: str, detail: str) -> tuple[int, dict]:
    return status, {"title": title, "status": status, "detail": detail}


class FakeRunPod(FakeVendor):
    """In-memory RunPod with pods that take a few describes to come up."""

    def __init__(self, api_key: str = "runpod-test-key", *, clock: Callable[[], datetime] | None = None,
                 provision_time: timedelta = timedelta(seconds=2), start_time: timedelta = timedelta(seconds=1),
                 run_commands: bool = True) -> None:
        super().__init__()
        self.api_key = api_key
        self.machines: dict[str, Machine] = {}
        self.reset(clock=clock, provision_time=provision_time, start_time=start_time, run_commands=run_commands)

    def reset(self, *, clock: Callable[[], datetime] | None = None, provision_time: timedelta = timedelta(seconds=2),
              start_time: timedelta = timedelta(seconds=1), run_commands: bool = True, seed: int = 0) -> None:
        """Back to a fresh account: nothing sold out, no pods, machines, faults or requests."""
        with self.lock:
            self.routes, self.requests, self.faults = [], [], []
            self.clock = clock or (lambda: datetime.now(UTC))
            self.provision_time, self.start_time, self.run_commands = provision_time, start_time, run_commands
            self.machine_setup: Callable[[Machine], None] = lambda machine: None
            self._remove_machines()
            self.sold_out = False
            self.sold_out_gpus: set[str] = set()
            self.balance_exhausted = False
            self.denied_gpus: set[str] = set()
            self.fleet: list[Host] = default_fleet()
            self.pods: dict[str, dict] = {}
            self.runs: dict[str, Run] = {}
            self.created: list[dict] = []  # request bodies of successful creates
            self._random = random.Random(seed)
            self._ports = itertools.count(35558)
            for method, path, handler in (
                ("POST", r"/v2/pods", self._create),
                ("GET", r"/v2/pods", self._list),
                ("GET", r"/v2/pods/(?P<id>[^/]+)", self._get),
                ("DELETE", r"/v2/pods/(?P<id>[^/]+)", self._delete),
                ("GET", r"/v2/catalog/gpus", self._catalog),
            ):
                self.route(method, path, self._authorized(handler))

    # -- control ------------------------------------------------------------------------------------------
    def make_ready(self, pod_id: str) -> None:
        """Finish starting now: RUNNING with ssh.direct and runtime."""
        with self.lock:
            self.pods[pod_id]["_ready"] = True

    def stop(self) -> None:
        """Stop serving and remove every pod's machine."""
        super().stop()
        with self.lock:
            self._remove_machines()

    def _remove_machines(self) -> None:
        for machine in self.machines.values():
            machine.remove()
        self.machines = {}

    def set_util(self, pod_id: str, utils: list[float]) -> None:
        """The GPU utilisation (%) the pod's runtime reports."""
        with self.lock:
            self.pods[pod_id]["_util"] = list(utils)

    def set_free(self, gpu: str, dc: str, free: int) -> None:
        """How many GPUs are free on every machine of `gpu` in data centre `dc`."""
        with self.lock:
            for machine in self.fleet:
                if machine.gpu == gpu and machine.dc == dc:
                    machine.free = free

    def billed_seconds(self, pod_id: str) -> float:
        """Run time of a pod from create to delete (or now)."""
        return self.runs[pod_id].seconds(self.clock())

    # -- handlers -----------------------------------------------------------------------------------------
    def _authorized(self, handler: Handler) -> Handler:
        def check(request: Request) -> tuple:
            if request.headers.get("authorization") != f"Bearer {self.api_key}":
                return 401, {"detail": "Unauthorized", "status": 401, "title": "Unauthorized"}
            with self.lock:
                return handler(request)
        return check

    def _create(self, request: Request) -> tuple:
        try:
            body = request.json()
        except ValueError:
            return _invalid("$: body is not valid JSON")
        problems = contract_problems("runpod", "CreatePodRequest", body)
        if problems:
            return _invalid(*problems)
        refused = self._refusal(body)
        if refused:
            return refused
        host = self._placement(body)
        if host is None or self.sold_out or body["gpu"]["id"] in self.sold_out_gpus:
            return 400, dict(NO_CAPACITY)
        self.created.append(body)
        return 201, self._view(self._new_pod(body, host))

    def _refusal(self, body: dict) -> tuple | None:
        """The create table's refusals before placement: a missing gpu, a broken rule, no balance, no access."""
        if ("gpu" in body) == ("cpu" in body):
            return _problem(400, "Bad Request", "exactly one of gpu or cpu is required")
        gpu = body["gpu"]
        if gpu.get("allowedCudaVersions") and gpu.get("minCudaVersion"):
            return _problem(400, "Bad Request", "allowedCudaVersions and minCudaVersion are mutually exclusive")
        if gpu["id"] not in GPU_TYPES:
            return _problem(400, "Bad Request", f"unknown GPU type {gpu['id']!r}")
        if self.balance_exhausted:
            return 402, dict(NO_BALANCE)
        if gpu["id"] in self.denied_gpus:
            return 403, dict(NO_ACCESS)
        return None

    def _placement(self, body: dict) -> Host | None:
        """The host with the most free GPUs that fits the body, or None."""
        gpu, centres = body["gpu"], body.get("dataCenterIds") or []
        count, cloud = gpu.get("count", 1), body.get("cloud", "SECURE")
        usable = [m for m in self.fleet if fits(m, gpu["id"], count, cloud, gpu.get("minCudaVersion"))
                  and m.free >= count and (not centres or m.dc in centres)]
        return max(usable, key=lambda m: m.free, default=None)

    def _catalog(self, request: Request) -> tuple:
        problem = query_problem(request.query)
        if problem:
            status, detail = problem
            return (_invalid(detail) if status == 422 else _problem(status, "Bad Request", detail))
        first = lambda key, default=None: request.query.get(key, [default])[0]  # noqa: E731
        return 200, {"gpus": catalog_gpus(self.fleet, int(first("count", "1")), first("cloud", "SECURE"),
                                          first("minCudaVersion"), with_stock=bool(first("include")))}

    def _new_pod(self, body: dict, host: Host) -> dict:
        pod_id = "".join(self._random.choices(string.ascii_lowercase + string.digits, k=14))
        count = body["gpu"].get("count", 1)
        secure, community = GPU_TYPES[body["gpu"]["id"]][2:4]
        rate = (community if body.get("cloud") == "COMMUNITY" else secure) * count
        host.free -= count
        self.pods[pod_id] = {
            "id": pod_id, "name": body["name"], "image": body["image"], "cost": round(rate, 4),
            "dataCenterId": host.dc, "cudaVersion": host.cuda,
            "gpu": {"id": body["gpu"]["id"], "count": count},
            "cloud": body.get("cloud", "SECURE"),
            "ports": body.get("ports") or [], "_util": [0.0] * count,
            "_ip": f"203.0.113.{len(self.pods) + 2}", "_port": next(self._ports), "_host": host,
            "_args": body.get("args") or "", "_env": body.get("env") or {}, "_ssh": bool(body.get("startSsh")),
            "_ready": False, "disk": body.get("disk", 50), "mounts": body.get("mounts") or {}, "registry": None,
            "template": None, "locked": False, "globalNetworking": {"enabled": False},
            "createdAt": self.clock().isoformat(), "startedAt": None,
        }
        self.runs[pod_id] = Run(pod_id, self.clock(), name=body["name"])
        return self.pods[pod_id]

    def _get(self, request: Request) -> tuple:
        pod = self.pods.get(request.match["id"])
        if pod is None:
            return 404, {"detail": "pod not found", "status": 404, "title": "Not Found"}
        return 200, self._view(pod)

    def _list(self, request: Request) -> tuple:
        return 200, {"pods": [self._view(pod) for pod in self.pods.values()]}

    def _delete(self, request: Request) -> tuple:
        pod = self.pods.pop(request.match["id"], None)
        if pod is None:
            return 404, {"detail": "pod not found", "status": 404, "title": "Not Found"}
        pod["_host"].free += pod["gpu"]["count"]
        self.runs[pod["id"]].terminated_at = self.clock()
        if pod["id"] in self.machines:
            self.machines[pod["id"]].stop()
        return 204, None

    def unrouted(self, request: Request) -> tuple:
        """RunPod's answer to a path it does not serve."""
        return _problem(404, "Not Found", "resource not found")

    def _view(self, pod: dict) -> dict:
        """The pod as the API shows it now."""
        status = self._status(pod)
        view = {k: v for k, v in pod.items() if not k.startswith("_")}
        proxy = f"{pod['id']}-64411eb2"  # the proxy user is an opaque routing token [I: its suffix]
        view.update(status=status, actions=["stop", "restart", "terminate"], args=pod["_args"], env=pod["_env"],
                    runtime=None, ssh={"proxy": {"host": "ssh.runpod.io", "port": 22, "username": proxy,
                                                 "command": f"ssh {proxy}@ssh.runpod.io"}, "direct": None})
        if status == "RUNNING":
            port = {"ip": pod["_ip"], "private": 22, "public": pod["_port"], "type": "tcp"}
            view["runtime"] = {"gpus": [{"util": round(u), "memoryUtil": 0} for u in pod["_util"]], "ports": [port],
                               "uptime": int(self.runs[pod["id"]].seconds(self.clock()))}
            if self._sshd_up(pod) and "22/tcp" in pod["ports"]:
                view["ssh"]["direct"] = {"host": pod["_ip"], "port": pod["_port"], "username": "root",
                                         "command": f"ssh root@{pod['_ip']} -p {pod['_port']}"}
        return view

    def _status(self, pod: dict) -> str:
        """PROVISIONING → (container starts) STARTING → RUNNING by the clock; EXITED once its command ended."""
        if pod["_ready"]:
            return "RUNNING"
        elapsed = self.clock() - self.runs[pod["id"]].launched_at
        if elapsed < self.provision_time:
            return "PROVISIONING"
        machine = self._container(pod)
        if machine is not None and not machine.alive():
            return "EXITED"
        return "STARTING" if elapsed < self.provision_time + self.start_time else "RUNNING"

    def _container(self, pod: dict) -> Machine | None:
        """The pod's running container, started on first sight after provisioning (with run_commands)."""
        if not self.run_commands:
            return None
        if pod["id"] not in self.machines:
            machine = self.machines[pod["id"]] = Machine()
            self.machine_setup(machine)
            argv = shlex.split(pod["_args"]) if pod["_args"] else [START_SH]
            machine.run([part.replace(START_SH, str(machine.root / "start.sh")) for part in argv], pod["_env"])
        return self.machines[pod["id"]]

    def _sshd_up(self, pod: dict) -> bool:
        """sshd runs once /start.sh ran (and the pod asked for SSH)."""
        if pod["_ready"]:
            return True
        machine = self.machines.get(pod["id"])
        started = (machine.root / "sshd.started").exists() if machine else (
            not self.run_commands and (not pod["_args"] or START_SH in pod["_args"]))
        return pod["_ssh"] and started
