"""AutoDL adapter over the Elastic Deployment (ESD) API: one `Container` deployment per instance.

Endpoints and shapes: spec §1.2. Vocabulary (GPU names, default prices, error mapping): providers.autodl_wire.
Retries for 429/5xx/timeouts belong to VendorHttp alone; this module never loops on errors.
Money in API bodies is CNY × 1000 integers; offers are priced in CNY per GPU-hour.
A container lives exactly as long as its `cmd` (spec §10): providers.startup.container_command starts the agent
and the policy's start_command in the background and ends with `exec sleep infinity`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from decimal import Decimal
from typing import Any

import httpx
from gpubot.domain.cuda import cuda_int
from gpubot.domain.errors import InvalidRequest, Transient
from gpubot.domain.model import Instance, Offer, OfferRequest, parse_instance_tag
from gpubot.domain.ports import GpuReading, LaunchSpec
from gpubot.providers.autodl.config import AutoDLConfig
from gpubot.providers.autodl.wire import AUTODL_GPUS, DEFAULT_PRICES_CNY, catalog_key, unwrap
from gpubot.providers.http import VendorHttp
from gpubot.providers.startup import container_command

__all__ = ["DEFAULT_IMAGE", "AutoDL"]

log = logging.getLogger(__name__)

STOCK = "/api/v1/dev/machine/region/gpu_stock"
DEPLOYMENT = "/api/v1/dev/deployment"
DEPLOYMENT_LIST = "/api/v1/dev/deployment/list"
CONTAINER_LIST = "/api/v1/dev/deployment/container/list"
OPERATE = "/api/v1/dev/deployment/operate"

DEFAULT_REGIONS = ["westDC2"]
DEFAULT_IMAGE = "base-image-l2t43iu6uk"  # public image, CUDA 11.8 + torch 2.0.0 (spec §1.1, A1)
CUDA_V_FROM, CUDA_V_TO = 118, 130  # host CUDA range: 11.8 … 13.0 (AutoDL ints, 118 = 11.8)
MAX_CUDA = f"{CUDA_V_TO // 10}.{CUDA_V_TO % 10}"  # what offers report as their highest CUDA
CPU_RANGE, MEMORY_GB_RANGE = (1, 1024), (1, 4096)  # wide scheduling floors/ceilings (A3: low floors schedule)
PRICE_HEADROOM = Decimal("1.5")  # price_to = offer price × count × 1.5 (× 1000), a ceiling, not a bid
PAGE_SIZE, MAX_PAGES = 100, 50
GONE = frozenset({"stopped", "deleted"})  # deployment statuses
# Container statuses once its command has ended (creating → … → running → shutting_down → shutdown, spec §1):
# the container runs nothing and is no longer billed, so it reads as our "terminated".
ENDED_CONTAINER = frozenset({"shutting_down", "shutdown", "stopped"})


class AutoDL:
    """Provider adapter for AutoDL Elastic Deployment (kind "autodl")."""

    kind = "autodl"

    def __init__(self, name: str, policy: AutoDLConfig, token: str, base_url: str = "https://api.autodl.com",
                 *, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] | None = None, timeout: float = 10.0,
                 cuda_v_from: int = CUDA_V_FROM) -> None:
        self.name = name
        self.policy = policy
        self.cuda_v_from = cuda_v_from
        headers = {"Authorization": token, "Content-Type": "application/json"}  # raw token, no "Bearer"
        self._http = VendorHttp(name, base_url, headers, timeout=timeout, transport=transport, sleep=sleep)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()

    # -- Provider protocol ---------------------------------------------------------------------------
    def offers(self, request: OfferRequest) -> list[Offer]:
        """One offer per region and AutoDL GPU name that maps to the requested GPU; never launches."""
        price = self._price(request.gpu)
        if request.gpu not in AUTODL_GPUS.values() or price is None:
            return []
        return [offer for region in self._regions(request)
                for offer in self._region_offers(region, request, price)]

    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """Create a Container deployment named spec.name; an existing live one of that name is returned."""
        existing = self._find_owned(spec.name)
        if existing is not None:
            return existing
        data = self._call("POST", DEPLOYMENT, self._deployment_body(offer, spec), region=offer.region,
                          idempotent=False)
        uuid = data.get("deployment_uuid") if isinstance(data, dict) else None
        if not uuid:
            raise Transient(self.name, "create deployment answered without deployment_uuid")
        return Instance(self.name, str(uuid), spec.name, region=offer.region, status="creating",
                        gpu=offer.gpu, count=offer.count, extra={"gpu_name": offer.ref})

    def describe(self, instance: Instance) -> Instance:
        """Current state from the container list; ready once a container runs and has an ssh command."""
        containers = list(self._pages(CONTAINER_LIST, {"deployment_uuid": instance.instance_id}))
        if containers:
            return _from_container(instance, _pick(containers))
        deployment = self._deployment(instance.instance_id)
        if deployment is None or deployment.get("status") in GONE:
            return replace(instance, status="terminated", ready=False, ssh=None)
        return replace(instance, status=str(deployment.get("status") or "pending"), ready=False)

    def terminate(self, instance: Instance) -> None:
        """Delete the deployment (AutoDL stops it first); a deployment already gone is success.

        If DELETE is refused while the deployment still exists, stop it explicitly (that ends billing) and
        delete once more, so a vendor that insists on stop-before-delete still gets there.
        """
        uuid = instance.instance_id
        try:
            self._call("DELETE", DEPLOYMENT, {"deployment_uuid": uuid})
        except (InvalidRequest, Transient):
            deployment = self._deployment(uuid)
            if deployment is None:
                return
            if deployment.get("status") not in GONE:
                self._call("PUT", OPERATE, {"deployment_uuid": uuid, "operate": "stop"})
            self._call("DELETE", DEPLOYMENT, {"deployment_uuid": uuid})

    def list_owned(self) -> list[Instance]:
        """Live deployments whose name is a gpubot tag."""
        return [self._from_deployment(d) for d in self._pages(DEPLOYMENT_LIST, {})
                if parse_instance_tag(str(d.get("name") or "")) and d.get("status") not in GONE]

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """Always empty: the ESD API exposes no GPU metrics (only the in-container AutoPanel does)."""
        return []

    # -- offers ---------------------------------------------------------------------------------------
    def _regions(self, request: OfferRequest) -> list[str]:
        regions = self.policy.regions or DEFAULT_REGIONS
        return [r for r in regions if request.region in (None, r)]

    def _price(self, gpu: str) -> Decimal | None:
        return self.policy.prices.get(gpu, DEFAULT_PRICES_CNY.get(gpu))

    def _region_offers(self, region: str, request: OfferRequest, price: Decimal) -> list[Offer]:
        # idle_gpu_num counts single cards across hosts: enough idle cards does not prove one host has them.
        # With a CUDA floor, gpu_stock counts only the hosts that meet it (cuda_v_from).
        return [Offer(self.name, region, request.gpu, request.count, price, "CNY",
                      available=idle >= request.count, ref=name, max_cuda=MAX_CUDA)
                for name, idle in self._stock(region, request.cuda).items() if catalog_key(name) == request.gpu]

    def _stock(self, region: str, cuda: str | None = None) -> dict[str, int]:
        body: dict[str, Any] = {"region_sign": region}
        if cuda:
            body["cuda_v_from"] = cuda_int(cuda)
        data = self._call("POST", STOCK, body, region=region)
        entries = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
        return {name: int(info.get("idle_gpu_num") or 0)
                for entry in entries if isinstance(entry, dict)
                for name, info in entry.items() if isinstance(info, dict)}

    # -- launch ---------------------------------------------------------------------------------------
    def _deployment_body(self, offer: Offer, spec: LaunchSpec) -> dict[str, Any]:
        price_to = math.ceil(offer.price_per_gpu_hour * offer.count * PRICE_HEADROOM * 1000)
        cuda_from = max(self.cuda_v_from, cuda_int(spec.cuda)) if spec.cuda else self.cuda_v_from
        template = {
            "dc_list": [offer.region], "gpu_name_set": [offer.ref], "gpu_num": offer.count,
            "cuda_v_from": cuda_from, "cuda_v_to": max(CUDA_V_TO, cuda_from),
            "cpu_num_from": CPU_RANGE[0], "cpu_num_to": CPU_RANGE[1],
            "memory_size_from": MEMORY_GB_RANGE[0], "memory_size_to": MEMORY_GB_RANGE[1],
            "price_from": 0, "price_to": price_to,
            "image_uuid": spec.image or self.policy.image or DEFAULT_IMAGE,
            # A container lives exactly as long as its cmd (spec §10): container_command ends blocking.
            "cmd": container_command(replace(spec, start_command=spec.start_command or self.policy.start_command)),
        }
        return {"name": spec.name, "deployment_type": "Container", "container_template": template}

    def _find_owned(self, name: str) -> Instance | None:
        return next((i for i in self.list_owned() if i.name == name), None)

    # -- reading --------------------------------------------------------------------------------------
    def _deployment(self, uuid: str) -> dict | None:
        return next((d for d in self._pages(DEPLOYMENT_LIST, {}) if d.get("uuid") == uuid), None)

    def _from_deployment(self, d: dict) -> Instance:
        template = d.get("template") or d.get("container_template") or {}
        names, regions = template.get("gpu_name_set") or [""], template.get("dc_list") or [""]
        return Instance(self.name, str(d.get("uuid")), str(d.get("name")), region=str(regions[0]),
                        status=str(d.get("status") or "unknown"), gpu=catalog_key(str(names[0])) or "",
                        count=int(template.get("gpu_num") or 0), extra={"gpu_name": names[0]})

    def _pages(self, path: str, body: dict) -> Iterator[dict]:
        for page in range(1, MAX_PAGES + 1):
            data = self._call("POST", path, {**body, "page_index": page, "page_size": PAGE_SIZE})
            data = data if isinstance(data, dict) else {}
            items = data.get("list") or []
            yield from (item for item in items if isinstance(item, dict))
            if not items or page >= int(data.get("max_page") or 1):
                return

    def _call(self, method: str, path: str, body: dict, *, region: str | None = None,
              idempotent: bool = True) -> Any:
        response = self._http.request(method, path, json=body, idempotent=idempotent)
        return unwrap(self.name, response, region)


def _pick(containers: list[dict]) -> dict:
    """The running container if any, else the newest one listed."""
    return next((c for c in containers if c.get("status") == "running"), containers[0])


def _from_container(instance: Instance, c: dict) -> Instance:
    info = c.get("info") or {}
    ssh = info.get("ssh_command") or None
    status = str(c.get("status") or "unknown")
    status = "terminated" if status in ENDED_CONTAINER else status
    price = c.get("price")
    extra = {**instance.extra, "container_uuid": c.get("uuid"),
             "price_per_hour_cny": Decimal(str(price)) / 1000 if price is not None else None}
    return replace(instance, status=status, ready=status == "running" and bool(ssh), ssh=ssh, extra=extra)
