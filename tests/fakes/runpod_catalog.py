"""The hosts behind the fake RunPod, and its catalog as `GET /v2/catalog/gpus` shows it (runpod_v2_openapi.json).

A pod runs on one host: a create is placed on a host of its GPU type, in one of its data centres, on its cloud,
whose CUDA version meets the floor and which has `count` GPUs free; otherwise the create fails with the recorded
400 "There are no longer any instances available…". The catalog reports stock from the same hosts, per the
query's `count`, `cloud` and `minCudaVersion`: HIGH when a host has at least twice the count free, LOW when one
has just enough, else NONE (the thresholds are not documented [I]).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GPU_TYPES", "Host", "availability", "catalog_gpus", "default_fleet", "fits", "query_problem"]

# RunPod GPU id → (display name, VRAM GB, secure price, community price, max GPUs per pod): runpod.io/pricing
# as transcribed in spec §8 (H100 SXM secure as of 2026-11-09); the PRO 4500 from the recorded pod's cost
GPU_TYPES: dict[str, tuple[str, int, float, float, int]] = {
    "NVIDIA H100 80GB HBM3": ("H100 SXM", 80, 3.99, 2.69, 8),
    "NVIDIA H100 PCIe": ("H100 PCIe", 80, 2.89, 1.99, 8),
    "NVIDIA A100-SXM4-80GB": ("A100 SXM", 80, 1.59, 1.39, 8),
    "NVIDIA A100 80GB PCIe": ("A100 PCIe", 80, 1.59, 1.19, 8),
    "NVIDIA L40S": ("L40S", 48, 1.09, 0.79, 8),
    "NVIDIA GeForce RTX 4090": ("RTX 4090", 24, 0.74, 0.34, 8),
    "NVIDIA RTX PRO 4500 Blackwell": ("RTX PRO 4500", 32, 0.72, 0.72, 4),
}
_CUDA = re.compile(r"^\d+(\.\d+)?$")


@dataclass
class Host:
    """One host: its GPU type, data centre, cloud, CUDA version and GPUs free now."""

    gpu: str
    dc: str
    cuda: str
    free: int
    cloud: str = "SECURE"


def default_fleet() -> list[Host]:
    """Two 8-GPU hosts of every type: CUDA 12.8 in EU-RO-1 and 12.4 in US-TX-3."""
    return [Host(gpu, dc, cuda, 8) for gpu in GPU_TYPES for dc, cuda in (("EU-RO-1", "12.8"), ("US-TX-3", "12.4"))]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def fits(host: Host, gpu: str, count: int, cloud: str, floor: str | None) -> bool:
    """Whether `host` could take a pod of `count` × `gpu` on `cloud` at CUDA ≥ `floor`, ignoring stock."""
    return (host.gpu == gpu and host.cloud == cloud and count <= GPU_TYPES[gpu][4]
            and (floor is None or _version(host.cuda) >= _version(floor)))


def availability(hosts: list[Host], count: int) -> str:
    """The catalog level for the best of `hosts` (already filtered by type, cloud and CUDA)."""
    best = max((h.free for h in hosts), default=0)
    return "HIGH" if best >= 2 * count else "LOW" if best >= count else "NONE"


def catalog_gpus(fleet: list[Host], count: int, cloud: str, floor: str | None, with_stock: bool) -> list[dict]:
    """`gpus` of listGpuTypes: every type with prices and ceilings, and stock when `with_stock`."""
    listed = []
    for gpu, (name, memory, secure, community, most) in GPU_TYPES.items():
        item = {"id": gpu, "name": name, "pool": None, "manufacturer": "NVIDIA", "memory": memory, "secure": True,
                "community": True, "price": {"secure": secure, "community": community},
                "maxCount": {"secure": most, "community": most}}
        if with_stock:
            item.update(_stock(fleet, gpu, count, cloud, floor))
        listed.append(item)
    return listed


def _stock(fleet: list[Host], gpu: str, count: int, cloud: str, floor: str | None) -> dict:
    usable = [m for m in fleet if fits(m, gpu, count, cloud, floor)]
    stock: dict = {"availability": availability(usable, count)}
    centres = sorted({m.dc for m in usable})
    if stock["availability"] != "NONE":
        stock["dataCenters"] = [{"id": dc, "name": dc, "availability": availability(
            [m for m in usable if m.dc == dc], count)} for dc in centres]
    versions = sorted({m.cuda for m in usable}, key=_version)
    if versions:
        stock["cudaVersions"] = [{"version": v, "available": availability(
            [m for m in usable if m.cuda == v], count) != "NONE"} for v in versions]
    return stock


def query_problem(query: dict[str, list[str]]) -> tuple[int, str] | None:
    """(status, detail) when listGpuTypes' query breaks its documented rules, else None."""
    include, product = query.get("include", [""])[0], query.get("product", [""])[0]
    if include not in ("", "AVAILABILITY"):
        return 422, f"include: value must be one of AVAILABILITY, got {include!r}"
    if bool(include) != bool(product):
        return 400, "product is required with include=AVAILABILITY, and valid only with it"
    if product and any(p not in ("POD", "CLUSTER", "SERVERLESS") for p in product.split(",")):
        return 422, f"product: unknown value {product!r}"
    count, cloud, floor = (query.get(k, [None])[0] for k in ("count", "cloud", "minCudaVersion"))
    if not include and (count or cloud or floor):
        return 400, "count, cloud and minCudaVersion are valid only with include=AVAILABILITY"
    if count is not None and not (count.isdigit() and int(count) >= 1):
        return 422, f"count: must be an integer >= 1, got {count!r}"
    if cloud not in (None, "SECURE", "COMMUNITY"):
        return 422, f"cloud: value must be one of SECURE, COMMUNITY, got {cloud!r}"
    if floor is not None and not _CUDA.match(floor):
        return 422, f"minCudaVersion: must be major or major.minor, got {floor!r}"
    return None
