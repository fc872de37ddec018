"""RunPod adapter over REST v2 (spec providers.md §3).

Decisions:
- Base URL: REST v1 (`https://rest.runpod.io/v1`) is retired on 2026-11-15, so this speaks v2. The default
  base is the spec's `https://api.runpod.io/v2` and every path is relative to it (`pods`, `pods/{id}`), so
  the real service and the fake (which serves the same `/v2/...` paths on loopback: pass `f"{fake.url}/v2"`)
  differ only in the base URL, which is configurable.
- Offers: RunPod publishes no stock endpoint that predicts a refusal (the spec: the price/stock listing does
  not predict "no longer any instances available"), and the spec documents no GPU-type/price endpoint for v2.
  So offers are built from the table below (spec §8, as of PRICES_AS_OF) with `available=True`; a price in
  `policy.prices` (catalog key → USD per GPU-hour) replaces the on-demand (SECURE) default. Capacity is only
  learnt at launch, as NoCapacity(scope="offer").
- Spot: v2 has no interruptible pods (SkyPilot still uses GraphQL for them). A spot request is served from
  the COMMUNITY cloud at the community price: cheaper, hosted by third parties, *not* preemptible. Offer.spot
  is set so the engine bills and labels it like the cheap tier that was asked for.
- Regions are RunPod data-center ids (`EU-RO-1`...): one offer per `policy.regions` entry, or a single offer
  in region "any" (no `dataCenterIds` sent) when the policy lists none.
- `cost` in a v2 pod is read as the hourly rate (the recorded pod shows cost 0.72 at uptime 3 s), so it goes
  to `Instance.extra["cost_per_hour"]`, not `cost_so_far`.
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
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import httpx

from domain.errors import AuthFailed, InvalidRequest, NoCapacity, ProviderError, Transient
from domain.model import Instance, Offer, OfferRequest, parse_instance_tag
from domain.policy import ProviderPolicy
from domain.ports import GpuReading, LaunchSpec
from providers.http import VendorHttp, vendor_shape
from providers.startup import runpod_start

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_IMAGE", "GPU_TYPES", "PRICES_AS_OF", "GpuType", "RunPod"]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.runpod.io/v2"
DEFAULT_IMAGE = "runpod/pytorch:2.1.0-py3.10-cuda11.8.0-devel-ubuntu22.04"
NO_CAPACITY_TEXT = "no longer any instances available"
ANY_REGION = "any"
MAX_GPUS = 8
# runpod.io/pricing as transcribed in spec §8 [b]; H100 SXM secure was 3.99 by 2026-11-09 [c]
PRICES_AS_OF = "2026-09-25"


@dataclass(frozen=True)
class GpuType:
    """A RunPod GPU id for a catalog key, with default USD prices per GPU-hour (None: unknown)."""

    gpu: str
    gpu_id: str
    secure: Decimal | None
    community: Decimal | None


GPU_TYPES: tuple[GpuType, ...] = (
    GpuType("h100", "NVIDIA H100 80GB HBM3", Decimal("3.49"), Decimal("2.69")),
    GpuType("h100", "NVIDIA H100 PCIe", Decimal("2.89"), Decimal("1.99")),
    GpuType("a100-80g", "NVIDIA A100-SXM4-80GB", Decimal("1.59"), Decimal("1.39")),
    GpuType("a100-80g", "NVIDIA A100 80GB PCIe", Decimal("1.59"), Decimal("1.19")),
    GpuType("l40s", "NVIDIA L40S", Decimal("1.09"), Decimal("0.79")),
    GpuType("rtx4090", "NVIDIA GeForce RTX 4090", Decimal("0.74"), Decimal("0.34")),
    GpuType("rtx3090", "NVIDIA GeForce RTX 3090", None, None),
    GpuType("rtx5090", "NVIDIA GeForce RTX 5090", None, None),
    GpuType("rtxpro6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition", None, None),
    GpuType("v100", "Tesla V100-SXM2-16GB", None, None),
)
_GPU_BY_ID = {t.gpu_id: t.gpu for t in GPU_TYPES}


class RunPod:
    """The Provider for RunPod pods."""

    kind = "runpod"

    def __init__(self, name: str, policy: ProviderPolicy, api_key: str, base_url: str = DEFAULT_BASE_URL, *,
                 transport: httpx.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep,
                 timeout: float = 10.0, attempts: int = 3) -> None:
        self.name, self.policy = name, policy
        self._http = VendorHttp(name, base_url, {"Authorization": f"Bearer {api_key}"}, timeout=timeout,
                                attempts=attempts, transport=transport, sleep=sleep)

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._http.close()

    # -- offers -------------------------------------------------------------------------------------------
    def offers(self, request: OfferRequest) -> list[Offer]:
        """Priced offers from the dated table and policy prices; capacity is unknown until launch."""
        if not 1 <= request.count <= MAX_GPUS:
            return []
        offers: list[Offer] = []
        for gpu_type in (t for t in GPU_TYPES if t.gpu == request.gpu):
            price = self._price(gpu_type, request.spot)
            if price is not None:
                offers += [Offer(self.name, region, request.gpu, request.count, price, "USD", spot=request.spot,
                                 ref=gpu_type.gpu_id) for region in self._regions(request)]
        return offers

    def _price(self, gpu_type: GpuType, spot: bool) -> Decimal | None:
        if spot:
            return gpu_type.community
        return self.policy.prices.get(gpu_type.gpu, gpu_type.secure)

    def _regions(self, request: OfferRequest) -> list[str]:
        if not self.policy.regions:
            return [request.region or ANY_REGION]
        return [r for r in self.policy.regions if not request.region or r == request.region]

    # -- launch -------------------------------------------------------------------------------------------
    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """Create one pod for the offer; it comes back provisioning."""
        response = self._http.request("POST", "pods", idempotent=False, json=self._pod_body(offer, spec))
        pod = self._body(response, offer)
        instance = self._to_instance(pod)
        return replace(instance, name=instance.name or spec.name, gpu=offer.gpu, count=offer.count,
                       region=instance.region or offer.region)

    def _pod_body(self, offer: Offer, spec: LaunchSpec) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": spec.name,
            "image": spec.image or self.policy.image or DEFAULT_IMAGE,
            "gpu": {"id": offer.ref, "count": offer.count},
            "cloud": "COMMUNITY" if offer.spot else "SECURE",
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

    # -- instances ----------------------------------------------------------------------------------------
    def describe(self, instance: Instance) -> Instance:
        """Current state; ready once RUNNING *and* ssh.direct is published; "terminated" when unknown."""
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
        body = self._body(self._http.request("GET", "pods"))
        with vendor_shape(self.name):
            pods = body if isinstance(body, list) else body["pods"]
            found = [self._to_instance(pod) for pod in pods]
        return [i for i in found if parse_instance_tag(i.name) and i.status != "terminated"]

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """Nothing: RunPod reports utilisation but no temperature, which GpuReading requires."""
        return []

    def _to_instance(self, pod: dict) -> Instance:
        with vendor_shape(self.name):
            status = str(pod.get("status") or pod.get("desiredStatus") or "unknown").lower()
            ssh, gpu = _ssh_command(pod), pod.get("gpu") or {}
            return Instance(self.name, str(pod["id"]), pod.get("name") or "",
                            region=pod.get("dataCenterId") or "", status=status,
                            ready=status == "running" and ssh is not None, ssh=ssh,
                            gpu=_GPU_BY_ID.get(gpu.get("id", ""), ""), count=int(gpu.get("count") or 0),
                            extra={"gpu_id": gpu.get("id"), "cost_per_hour": pod.get("cost")})

    # -- answers ------------------------------------------------------------------------------------------
    def _body(self, response: httpx.Response, offer: Offer | None = None) -> Any:
        """The parsed body of a successful answer, or the matching ProviderError."""
        if not response.is_success:
            raise self._error(response, offer)
        try:
            return response.json()
        except ValueError as exc:
            log.warning("%s: unreadable answer HTTP %s: %s", self.name, response.status_code,
                        response.text[:500])
            raise Transient(self.name, "unreadable answer") from exc

    def _error(self, response: httpx.Response, offer: Offer | None = None) -> ProviderError:
        detail = _detail(response)
        status = response.status_code
        if status == 400 and NO_CAPACITY_TEXT in detail.lower():
            return NoCapacity(self.name, detail, scope="offer", region=offer.region if offer else None)
        if status in (401, 403):
            return AuthFailed(self.name, detail or f"HTTP {status}")
        if status == 422:
            return InvalidRequest(self.name, detail)
        log.warning("%s: unexpected answer HTTP %s: %s", self.name, status, response.text[:500])
        return Transient(self.name, f"HTTP {status}: {detail[:200]}")


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
