"""A faithful fake of AutoDL's Elastic Deployment API (spec §1.2, §1.3) on 127.0.0.1.

Every answer is the AutoDL envelope {"code","msg","data","request_id"}; business errors are HTTP 200 with a
non-Success code unless configured otherwise. A stock table per region drives gpu_stock and creation; each
deployment keeps a RunRecord (created/running/stopped/deleted times from an injectable clock) for billing
comparisons.

Boot and lifetime, by the clock (spec §10): a new container is `creating` (no `info.ssh_command`) for
`create_time`, then its `cmd` starts and it is `starting` for `start_time`, then `running` with SSH details.
An AutoDL container lives exactly as long as its `cmd`: with `run_commands` (the default) the fake runs `cmd`
for real under `bash -c` on a tests.fakes.machine.Machine (stub nvidia-smi, a PATH of its own, GPUBOT_ROOT in
a scratch directory; `machine_setup` steers each new machine) and shuts the container down (`shutdown`, the
deployment `stopped`, stock returned) once `cmd` returns. A command that backgrounds its work and returns
kills its container, as on AutoDL. The clock is read when the API is called, so a test moves time by moving
its clock; the real command runs in real time.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.fakes.machine import Machine
from tests.fakes.server import FakeVendor, Request

__all__ = ["FakeAutoDL", "RunRecord"]

_TEMPLATE_REQUIRED = ("dc_list", "gpu_name_set", "gpu_num", "cuda_v_from", "image_uuid", "cmd")
_DEFAULT_PRICES = {"RTX 4090": 1980, "RTX 3090": 1580, "H800": 8880, "A100-SXM4-80GB": 6680}


@dataclass
class RunRecord:
    """When a deployment existed, ran and stopped: what AutoDL would bill against."""

    deployment_uuid: str
    name: str
    region: str
    gpu_name: str
    gpu_num: int
    created_at: datetime
    running_at: datetime | None = None
    stopped_at: datetime | None = None
    deleted_at: datetime | None = None

    def runtime(self, now: datetime) -> timedelta:
        """Time from creation until stop (or `now` while still alive)."""
        return (self.stopped_at or now) - self.created_at


@dataclass
class _Deployment:
    uuid: str
    name: str
    body: dict
    region: str
    gpu_name: str
    gpu_num: int
    status: str = "running"
    deleted: bool = False
    container_uuid: str = field(default_factory=lambda: secrets.token_hex(5))
    machine: Machine | None = None


class FakeAutoDL(FakeVendor):
    """AutoDL ESD fake: token check, stock table, deployments, containers and run records."""

    def __init__(self, token: str = "test-token", *, clock: Callable[[], datetime] | None = None,
                 create_time: timedelta = timedelta(seconds=2), start_time: timedelta = timedelta(seconds=1),
                 run_commands: bool = True) -> None:
        super().__init__()
        self.token = token
        self.clock = clock or (lambda: datetime.now(UTC))
        self.create_time, self.start_time, self.run_commands = create_time, start_time, run_commands
        self.machine_setup: Callable[[Machine], None] = lambda machine: None
        self.stock: dict[str, dict[str, list[int]]] = {}
        self.prices = dict(_DEFAULT_PRICES)  # CNY × 1000 per card-hour
        self.deployments: dict[str, _Deployment] = {}
        self.runs: dict[str, RunRecord] = {}
        self.auth_status, self.auth_code, self.auth_msg = 200, "AuthorizeFailed", "无效的token"
        self.no_stock_code, self.no_stock_msg, self.no_stock_status = "NoResource", "库存不足", 200
        self.forced_create_errors: list[tuple[int, str, str]] = []
        self._ports = itertools.count(40001)
        for method, path, handler in (
            ("POST", r"/api/v1/dev/machine/region/gpu_stock", self._gpu_stock),
            ("POST", r"/api/v1/dev/deployment", self._create),
            ("POST", r"/api/v1/dev/deployment/list", self._list_deployments),
            ("POST", r"/api/v1/dev/deployment/container/list", self._list_containers),
            ("PUT", r"/api/v1/dev/deployment/operate", self._operate),
            ("DELETE", r"/api/v1/dev/deployment", self._delete),
        ):
            self.route(method, path, self._guarded(handler))

    # -- set-up -------------------------------------------------------------------------------------
    def set_stock(self, region: str, gpu_name: str, idle: int, total: int | None = None) -> None:
        """Set idle and total cards of one GPU name in one region."""
        with self.lock:
            self.stock.setdefault(region, {})[gpu_name] = [idle, total if total is not None else idle]

    def fail_next_create(self, code: str, msg: str, status: int = 200) -> None:
        """Make the next create answer this error envelope whatever the stock."""
        with self.lock:
            self.forced_create_errors.append((status, code, msg))

    def idle(self, region: str, gpu_name: str) -> int:
        """Idle cards of a GPU name in a region."""
        return self.stock.get(region, {}).get(gpu_name, [0, 0])[0]

    def live(self) -> list[_Deployment]:
        """Deployments that are neither stopped nor deleted."""
        return [d for d in self.deployments.values() if not d.deleted and d.status != "stopped"]

    def machine(self, deployment_uuid: str) -> Machine | None:
        """The machine running a deployment's container (None before its cmd started, or without run_commands)."""
        return self.deployments[deployment_uuid].machine

    def stop(self) -> None:
        """Stop serving and remove every container's machine."""
        super().stop()
        with self.lock:
            for d in self.deployments.values():
                if d.machine:
                    d.machine.remove()

    # -- envelope and auth --------------------------------------------------------------------------
    @staticmethod
    def envelope(data: Any = None, code: str = "Success", msg: str = "") -> dict:
        """The AutoDL response envelope."""
        return {"code": code, "msg": msg, "data": data, "request_id": secrets.token_hex(8)}

    def _guarded(self, handler: Callable[[dict], tuple]) -> Callable[[Request], tuple]:
        def serve(request: Request) -> tuple:
            if request.headers.get("authorization") != self.token:
                return self.auth_status, self.envelope(None, self.auth_code, self.auth_msg)
            try:
                body = request.json() or {}
            except ValueError:
                body = None
            if not isinstance(body, dict):
                return 200, self.envelope(None, "InvalidParameter", "参数错误: body must be a JSON object")
            with self.lock:
                return handler(body)
        return serve

    @staticmethod
    def _paged(items: list[dict], body: dict) -> dict:
        index, size = max(1, int(body.get("page_index") or 1)), max(1, int(body.get("page_size") or 10))
        page = items[(index - 1) * size: index * size]
        max_page = max(1, -(-len(items) // size))
        return {"list": page, "page_index": index, "page_size": size, "offset": (index - 1) * size,
                "max_page": max_page, "result_total": len(items)}

    # -- handlers -----------------------------------------------------------------------------------
    def _gpu_stock(self, body: dict) -> tuple:
        region = self.stock.get(str(body.get("region_sign") or ""), {})
        data = [{name: {"idle_gpu_num": idle, "total_gpu_num": total}}
                for name, (idle, total) in region.items()]
        return 200, self.envelope(data)

    def _create(self, body: dict) -> tuple:
        template = body.get("container_template")
        problem = self._invalid_create(body, template)
        if problem:
            return 200, self.envelope(None, "InvalidParameter", f"参数错误: {problem}")
        if self.forced_create_errors:
            status, code, msg = self.forced_create_errors.pop(0)
            return status, self.envelope(None, code, msg)
        place = self._place(template)
        if place is None:
            return self.no_stock_status, self.envelope(None, self.no_stock_code, self.no_stock_msg)
        return 200, self.envelope({"deployment_uuid": self._start(body, *place)})

    @staticmethod
    def _invalid_create(body: dict, template: Any) -> str | None:
        if not body.get("name"):
            return "name is required"
        if body.get("deployment_type") not in ("ReplicaSet", "Job", "Container"):
            return "deployment_type must be ReplicaSet, Job or Container"
        if body["deployment_type"] != "Container" and not body.get("replica_num"):
            return "replica_num is required"
        if not isinstance(template, dict):
            return "container_template is required"
        missing = [key for key in _TEMPLATE_REQUIRED if not template.get(key)]
        return f"container_template.{missing[0]} is required" if missing else None

    def _place(self, template: dict) -> tuple[str, str, int] | None:
        count = int(template["gpu_num"])
        for region in template["dc_list"]:
            for name in template["gpu_name_set"]:
                if self.idle(region, name) >= count:
                    return region, name, count
        return None

    def _start(self, body: dict, region: str, gpu_name: str, count: int) -> str:
        uuid = secrets.token_hex(8)[:15]
        self.stock[region][gpu_name][0] -= count
        self.deployments[uuid] = _Deployment(uuid, body["name"], body, region, gpu_name, count)
        self.runs[uuid] = RunRecord(uuid, body["name"], region, gpu_name, count, self.clock())
        return uuid

    def _list_deployments(self, body: dict) -> tuple:
        items = [self._deployment_view(d) for d in self.deployments.values() if not d.deleted]
        return 200, self.envelope(self._paged(items, body))

    def _deployment_view(self, d: _Deployment) -> dict:
        run = self.runs[d.uuid]
        running = int(self._container_status(d) == "running")
        return {"uuid": d.uuid, "name": d.name, "deployment_type": d.body["deployment_type"],
                "status": d.status, "replica_num": d.body.get("replica_num", 1), "parallelism_num": 1,
                "reuse_container": False, "starting_num": int(d.status != "stopped") - running,
                "running_num": running, "finished_num": 0,
                "image_uuid": d.body["container_template"]["image_uuid"],
                "template": d.body["container_template"],
                "created_at": run.created_at.isoformat(),
                "stopped_at": run.stopped_at.isoformat() if run.stopped_at else None}

    def _list_containers(self, body: dict) -> tuple:
        d = self.deployments.get(str(body.get("deployment_uuid") or ""))
        if d is None or d.deleted:
            return 200, self.envelope(self._paged([], body))
        return 200, self.envelope(self._paged([self._container_view(d)], body))

    def _container_view(self, d: _Deployment) -> dict:
        run = self.runs[d.uuid]
        status = self._container_status(d)
        if status == "running" and run.running_at is None:
            run.running_at = self.clock()
        ssh = f"ssh -p {next(self._ports)} root@connect.{d.region}.autodl.com" if status == "running" else ""
        return {"uuid": d.container_uuid, "deployment_uuid": d.uuid, "machine_id": "m-" + d.uuid[:6],
                "status": status, "gpu_name": d.gpu_name, "gpu_num": d.gpu_num, "cpu_num": 16,
                "memory_size": 64 * 2**30, "image_uuid": d.body["container_template"]["image_uuid"],
                "price": self.prices.get(d.gpu_name, 1000) * d.gpu_num,
                "info": {"ssh_command": ssh, "root_password": "pw" if ssh else "", "service_url": "",
                         "proxy_host": f"connect.{d.region}.autodl.com", "custom_port": None},
                "started_at": run.running_at.isoformat() if run.running_at else None,
                "stopped_at": run.stopped_at.isoformat() if run.stopped_at else None}

    def _container_status(self, d: _Deployment) -> str:
        """creating → (cmd starts) starting → running, by the clock; shutdown once cmd returned."""
        if d.status == "stopped":
            return "shutdown"
        elapsed = self.clock() - self.runs[d.uuid].created_at
        if elapsed < self.create_time:
            return "creating"
        if self.run_commands and d.machine is None:
            d.machine = Machine()
            self.machine_setup(d.machine)
            d.machine.run(["bash", "-c", d.body["container_template"]["cmd"]])
        if d.machine is not None and not d.machine.alive():
            self._stop(d)  # the container lives exactly as long as its cmd
            return "shutdown"
        return "starting" if elapsed < self.create_time + self.start_time else "running"

    def _operate(self, body: dict) -> tuple:
        d = self.deployments.get(str(body.get("deployment_uuid") or ""))
        if d is None or d.deleted:
            return 200, self.envelope(None, "NotFound", "部署不存在")
        if body.get("operate") != "stop":
            return 200, self.envelope(None, "InvalidParameter", "参数错误: operate must be stop")
        self._stop(d)
        return 200, self.envelope(None)

    def _delete(self, body: dict) -> tuple:
        d = self.deployments.get(str(body.get("deployment_uuid") or ""))
        if d is None or d.deleted:
            return 200, self.envelope(None, "NotFound", "部署不存在")
        self._stop(d)
        d.deleted = True
        self.runs[d.uuid].deleted_at = self.clock()
        return 200, self.envelope(None)

    def _stop(self, d: _Deployment) -> None:
        if d.status == "stopped":
            return
        if d.machine is not None:
            d.machine.stop()
        d.status = "stopped"
        self.stock[d.region][d.gpu_name][0] += d.gpu_num
        self.runs[d.uuid].stopped_at = self.clock()
