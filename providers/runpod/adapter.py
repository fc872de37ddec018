"""RunPod adapter over REST v2 (spec providers.md §3 and §10, runpod_v2_openapi.json).

Decisions:
- Base URL: REST v1 (`https://rest.runpod.io/v1`) is retired on 2026-11-15, so this speaks v2. The default
  base is the spec's `https://api.runpod.io/v2` and every path is relative to it (`pods`, `catalog/gpus`), so
  the real service and the fake (which serves the same `/v2/...` paths on loopback: pass `f"{fake.url}/v2"`)
  differ only in the base URL, which is configurable.
- Offers are priced and stocked from the catalog: `GET /v2/catalog/gpus?include=AVAILABILITY&product=POD` with
  the request's GPU `count`, `cloud=SECURE` and, for a booking with a CUDA floor, `minCudaVersion` — so the
  stock it reports is stock for that very pod. It is read once per probe round and GPU count (RoundCache).
  Price per GPU-hour = `price.secure` (a price in `policy.prices`, catalog key → USD, overrides it); a type
  whose `maxCount.secure` is below the count is not offered. With `policy.regions` there is one offer per listed
  data centre, `available` when the type's per-data-centre `dataCenters` entry is not NONE; without them one
  offer in region "any" (RunPod places the pod) with the overall `availability`. The data-centre catalog
  (`/v2/catalog/datacenters?include=GPU_AVAILABILITY`) is not read: its stock is not scoped to a GPU count, a
  cloud or a CUDA floor, and the GPU catalog already lists stock per data centre. No dated price table is kept:
  when the catalog cannot be read, RunPod gives no offers in that round rather than stale prices. `max_cuda` is
  the highest CUDA version the catalog lists for the type.
- Spot: REST v2 has no interruptible pods — the create body allows no `interruptible` field (the schema closes
  the body with `unevaluatedProperties: false`, a 422) and the catalog quotes no interruptible price. The
  community cloud is not spot either (spec §10). So a spot request gets no RunPod offers.
- The booking's CUDA floor goes to the create body as `gpu.minCudaVersion` ("major.minor").
- Errors of the create call, by its own documented table: 422 contract violation → InvalidRequest (never
  retried); 400 "try your next candidate" (capacity, or a cross-field rule) → NoCapacity for that offer; 402
  insufficient balance → QuotaExceeded (no candidate on RunPod can succeed: the acquisition loop blocks the
  provider and alerts on-call); 403 no access to that pool → NoAccess (skip this candidate only); 429 → retried
  by VendorHttp after Retry-After, then RateLimited; 5xx → VendorHttp retries the same candidate (the create is
  `repeatable` on 5xx, as the table says), then Transient. A create that succeeded only after such a retry
  may have left a twin pod under the same name from the attempt that failed: the twins are deleted at once.
- Regions are RunPod data-centre ids (`EU-RO-1`...).
- `cost` in a v2 pod is the hourly rate (the schema: "current cost in USD per hour"), so it goes to
  `Instance.extra["cost_per_hour"]`, not `cost_so_far`.
- telemetry() returns []: v2 reports `runtime.gpus[].util` but no temperature, and GpuReading needs `temp_c`;
  inventing one would trip or mask overheat checks.
- Start command: `args` is the v2 create body's only start-command field, and it *replaces* the image's own
  (`/start.sh`, which starts sshd on RunPod's images). providers.startup.runpod_start wraps the agent and the
  policy's start_command as `bash -c '…; exec /start.sh'`, with the token in `env`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

import httpx
from gpubot.domain.cuda import cuda_version
from gpubot.domain.errors import (
    AuthFailed,
    InvalidRequest,
    NoAccess,
    NoCapacity,
    ProviderError,
    QuotaExceeded,
    Transient,
)
from gpubot.domain.model import Instance, Offer, OfferRequest, parse_instance_tag
from gpubot.domain.ports import GpuReading, LaunchSpec
from gpubot.providers.http import VendorHttp, attempts_of, vendor_shape
from gpubot.providers.round_cache import RoundCache
from gpubot.providers.runpod.config import RunPodConfig
from gpubot.providers.startup import runpod_start

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_IMAGE", "GPU_KEYS", "RunPod"]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.runpod.io/v2"
DEFAULT_IMAGE = "runpod/pytorch:2.1.0-py3.10-cuda11.8.0-devel-ubuntu22.04"
ANY_REGION = "any"
MAX_GPUS = 8
CATALOG_TTL = 5.0  # seconds one catalog answer serves a probe round
SERVER_ERRORS = frozenset({500, 502, 503, 504})
# PodStatus values after which the pod runs nothing: EXITED (its container stopped; cost 0.0) and TERMINATED
# (deleted). Both read as our "terminated", so reconcile stops billing the booking and cleans the pod up.
ENDED_STATUSES = frozenset({"exited", "terminated"})  # the create table: "retry the same candidate"

# RunPod GPU type id → our catalog key (the types gpubot books; others in the catalog are skipped)
GPU_KEYS: dict[str, str] = {
    "NVIDIA H100 80GB HBM3": "h100",
    "NVIDIA H100 PCIe": "h100",
    "NVIDIA A100-SXM4-80GB": "a100-80g",
    "NVIDIA A100 80GB PCIe": "a100-80g",
    "NVIDIA L40S": "l40s",
    "NVIDIA GeForce RTX 4090": "rtx4090",
    "NVIDIA GeForce RTX 3090": "rtx3090",
    "NVIDIA GeForce RTX 5090": "rtx5090",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtxpro6000",
    "Tesla V100-SXM2-16GB": "v100",
}


class RunPod:
    """The Provider for RunPod pods."""

    kind = "runpod"

    def __init__(self, name: str, policy: RunPodConfig, api_key: str, base_url: str = DEFAULT_BASE_URL, *,
                 transport: httpx.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep,
                 timeout: float = 10.0, attempts: int = 3, clock: Callable[[], float] = time.monotonic,
                 catalog_ttl: float = CATALOG_TTL) -> None:
        self.name, self.policy = name, policy
        self._http = VendorHttp(name, base_url, {"Authorization": f"Bearer {api_key}"}, timeout=timeout,
                                attempts=attempts, transport=transport, sleep=sleep)
        self._catalogs: RoundCache[list] = RoundCache(catalog_ttl, clock)

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._http.close()

    # -- offers -------------------------------------------------------------------------------------------
    def offers(self, request: OfferRequest) -> list[Offer]:
        """Offers priced and stocked from the catalog for this GPU count (and CUDA floor); none for spot."""
        if request.spot or not 1 <= request.count <= MAX_GPUS:
            return []
        gpus = self._catalogs.get((request.count, request.cuda), lambda: self._catalog(request))
        with vendor_shape(self.name):
            return [offer for gpu in gpus if GPU_KEYS.get(gpu["id"]) == request.gpu
                    for offer in self._offers_for(gpu, request)]

    def _catalog(self, request: OfferRequest) -> list:
        params = {"include": "AVAILABILITY", "product": "POD", "count": request.count, "cloud": "SECURE"}
        if request.cuda:
            params["minCudaVersion"] = request.cuda
        body = self._body(self._http.request("GET", "catalog/gpus", params=params))
        with vendor_shape(self.name):
            return list(body["gpus"])

    def _offers_for(self, gpu: dict, request: OfferRequest) -> list[Offer]:
        if not gpu["secure"] or int(gpu["maxCount"]["secure"]) < request.count:
            return []
        price = self.policy.prices.get(request.gpu, Decimal(str(gpu["price"]["secure"])))
        stock = {dc["id"]: dc["availability"] for dc in gpu.get("dataCenters") or []}
        regions = self._regions(request)
        return [Offer(self.name, region, request.gpu, request.count, price, "USD",
                      available=_in_stock(gpu.get("availability")) if region == ANY_REGION
                      else _in_stock(stock.get(region)), ref=gpu["id"], max_cuda=_max_cuda(gpu))
                for region in regions]

    def _regions(self, request: OfferRequest) -> list[str]:
        if not self.policy.regions:
            return [request.region or ANY_REGION]
        return [r for r in self.policy.regions if not request.region or r == request.region]

    # -- launch -------------------------------------------------------------------------------------------
    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """Create one pod for the offer; it comes back provisioning."""
        response = self._http.request("POST", "pods", idempotent=False, repeatable=SERVER_ERRORS,
                                      json=self._pod_body(offer, spec))
        if not response.is_success:
            raise self._create_error(response, offer)
        instance = self._to_instance(self._body(response))
        if attempts_of(response) > 1:
            self._remove_twins(instance)
        return replace(instance, name=instance.name or spec.name, gpu=offer.gpu, count=offer.count,
                       region=instance.region or offer.region)

    def _pod_body(self, offer: Offer, spec: LaunchSpec) -> dict[str, Any]:
        gpu: dict[str, Any] = {"id": offer.ref, "count": offer.count}
        if spec.cuda:
            gpu["minCudaVersion"] = "{}.{}".format(*cuda_version(spec.cuda))
        body: dict[str, Any] = {
            "name": spec.name,
            "image": spec.image or self.policy.image or DEFAULT_IMAGE,
            "gpu": gpu,
            "cloud": "SECURE",
            "ports": ["22/tcp"],
            "startSsh": True,
        }
        if offer.region != ANY_REGION:
            body["dataCenterIds"] = [offer.region]
        # `args` replaces the image's start command (/start.sh, which starts sshd): runpod_start keeps it last.
        args, env = runpod_start(replace(spec, start_command=spec.start_command or self.policy.start_command))
        if args:
            body["args"] = args
        if spec.ssh_public_key:
            env["PUBLIC_KEY"] = spec.ssh_public_key
        if env:
            body["env"] = env
        return body

    def _remove_twins(self, kept: Instance) -> None:
        """Delete other pods under the same name: a create that failed with a 5xx may still have made one."""
        try:
            twins = [i for i in self._listed() if i.name == kept.name and i.instance_id != kept.instance_id]
            for twin in twins:
                log.warning("%s: deleting pod %s, a twin of %s left by a retried create", self.name,
                            twin.instance_id, kept.instance_id)
                self.terminate(twin)
        except ProviderError as exc:
            log.warning("%s: could not look for twins of %s: %s", self.name, kept.name, exc)

    # -- instances ----------------------------------------------------------------------------------------
    def describe(self, instance: Instance) -> Instance:
        """Current state; ready once RUNNING *and* ssh.direct is published; "terminated" when unknown, EXITED or
        TERMINATED."""
        response = self._http.request("GET", f"pods/{instance.instance_id}")
        if response.status_code == 404:
            return replace(instance, status="terminated", ready=False, ssh=None)
        return self._to_instance(self._body(response))

    def terminate(self, instance: Instance) -> None:
        """Delete the pod; an unknown pod counts as done."""
        response = self._http.request("DELETE", f"pods/{instance.instance_id}")
        if response.status_code != 404 and not response.is_success:
            raise self._error(response)

    def list_owned(self) -> list[Instance]:
        """Live pods whose name carries our `gpubot-` tag."""
        return [i for i in self._listed() if parse_instance_tag(i.name) and i.status != "terminated"]

    def _listed(self) -> list[Instance]:
        body = self._body(self._http.request("GET", "pods"))
        with vendor_shape(self.name):
            return [self._to_instance(pod) for pod in body["pods"]]

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """Nothing: RunPod reports utilisation but no temperature, which GpuReading requires."""
        return []

    def _to_instance(self, pod: dict) -> Instance:
        with vendor_shape(self.name):
            status = str(pod.get("status") or pod.get("desiredStatus") or "unknown").lower()
            status = "terminated" if status in ENDED_STATUSES else status
            ssh, gpu = _ssh_command(pod), pod.get("gpu") or {}
            return Instance(self.name, str(pod["id"]), pod.get("name") or "",
                            region=pod.get("dataCenterId") or "", status=status,
                            ready=status == "running" and ssh is not None, ssh=ssh,
                            gpu=GPU_KEYS.get(gpu.get("id", ""), ""), count=int(gpu.get("count") or 0),
                            extra={"gpu_id": gpu.get("id"), "cost_per_hour": pod.get("cost")})

    # -- answers ------------------------------------------------------------------------------------------
    def _body(self, response: httpx.Response) -> Any:
        """The parsed body of a successful answer, or the matching ProviderError."""
        if not response.is_success:
            raise self._error(response)
        try:
            return response.json()
        except ValueError as exc:
            log.warning("%s: unreadable answer HTTP %s: %s", self.name, response.status_code,
                        response.text[:500])
            raise Transient(self.name, "unreadable answer") from exc

    def _create_error(self, response: httpx.Response, offer: Offer) -> ProviderError:
        """The create operation's own table (see the module docstring)."""
        detail, status = _detail(response), response.status_code
        if status == 400:  # capacity or a cross-field rule: "try your next candidate"
            return NoCapacity(self.name, detail or "HTTP 400", scope="offer", region=offer.region)
        if status == 402:
            return QuotaExceeded(self.name, f"insufficient balance (HTTP 402): {detail}")
        if status == 403:
            return NoAccess(self.name, f"no access to {offer.ref} in {offer.region} (HTTP 403): {detail}",
                            region=offer.region)
        if status in (404, 422):
            return InvalidRequest(self.name, detail or f"HTTP {status}")
        return self._error(response)

    def _error(self, response: httpx.Response) -> ProviderError:
        detail, status = _detail(response), response.status_code
        if status in (401, 403):
            return AuthFailed(self.name, detail or f"HTTP {status}")
        if status in (400, 404, 409, 422):
            return InvalidRequest(self.name, detail or f"HTTP {status}")
        log.warning("%s: unexpected answer HTTP %s: %s", self.name, status, response.text[:500])
        return Transient(self.name, f"HTTP {status}: {detail[:200]}")


def _in_stock(level: str | None) -> bool:
    """True for a catalog availability level of LOW, MEDIUM or HIGH (absent or NONE: nothing free)."""
    return level in ("LOW", "MEDIUM", "HIGH")


def _max_cuda(gpu: dict) -> str | None:
    """The highest CUDA version the catalog lists for a GPU type (None when it lists none)."""
    versions = [v["version"] for v in gpu.get("cudaVersions") or []]
    return max(versions, key=lambda v: tuple(int(p) for p in v.split(".")), default=None)


def _ssh_command(pod: dict) -> str | None:
    """`ssh root@host -p port` from the pod's ssh.direct, or None while RunPod has not published it."""
    direct = (pod.get("ssh") or {}).get("direct")
    if not direct:
        return None
    return f"ssh {direct.get('username') or 'root'}@{direct['host']} -p {direct['port']}"


def _detail(response: httpx.Response) -> str:
    """The human text of a RunPod error body (v2 `detail` + `errors`, v1 `error`), or the raw text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    if not isinstance(body, dict):
        return str(body)[:500]
    parts = [str(body.get("detail") or body.get("error") or ""), *map(str, body.get("errors") or [])]
    return "; ".join(p for p in parts if p)
