"""Compute Engine vocabulary, pure: which machine type serves a GPU shape, what it costs, how GCP errors map.

Shapes (Google's accelerator-optimized and N1+GPU machine families): T4 and V100 are *attached* to an N1
machine type as guest accelerators; L4 (G2), A100 40 GB (A2 Standard `a2-highgpu-*`, `a2-megagpu-16g`),
A100 80 GB (A2 Ultra `a2-ultragpu-*`) and H100 80 GB (A3 High `a3-highgpu-*`) come *bundled* with their
machine type. Whether a zone sells a shape is read from its machineTypes/acceleratorTypes lists, not assumed.

Zones and regions: an offer's `region` is the GCP region (`us-central1`) and its `ref` is
`<zone>/<machine type>` (`us-central1-a/g2-standard-4`), so the acquisition loop's three block scopes mean
offer = one zone's machine type, region = a GCP region, provider = all of GCP.

Error codes (spec providers.md §6, §7; SkyPilot's blocking rules) → our tree:

    ZONE_RESOURCE_POOL_EXHAUSTED(_WITH_DETAILS), UNSUPPORTED_OPERATION,
    insufficientCapacity, RESOURCE_NOT_READY, RESOURCE_OPERATION_RATE_EXCEEDED
                                                → NoCapacity(scope="offer")     the zone: try the next zone
    QUOTA_EXCEEDED / quotaExceeded              → QuotaExceeded(scope="region"), or scope="provider" when
                                                  the message names GPUS_ALL_REGIONS or a global limit
    rateLimitExceeded, userRateLimitExceeded    → RateLimited                   back off
    HTTP 401, authError, forbidden, accessNotConfigured, SERVICE_DISABLED
                                                → AuthFailed
    HTTP 400 invalid…, notFound, alreadyExists  → InvalidRequest
    anything else (5xx, timeouts, unknown)      → Transient
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gpubot.domain.errors import (
    AuthFailed,
    InvalidRequest,
    NoCapacity,
    ProviderError,
    QuotaExceeded,
    RateLimited,
    Transient,
)

__all__ = [
    "ON_DEMAND_USD",
    "PRICES_AS_OF",
    "SHAPES",
    "SPOT_USD",
    "Shape",
    "classify",
    "offer_ref",
    "price_per_gpu_hour",
    "region_of",
    "shape_for",
    "shape_of",
    "split_ref",
]


@dataclass(frozen=True)
class Shape:
    """How GCP sells `count` GPUs of one kind: a machine type, its accelerator type, attached or bundled."""

    machine_type: str
    accelerator: str
    count: int
    attached: bool = False  # N1: the GPUs go in guestAccelerators; otherwise the machine type carries them
    spot_only: bool = False  # Google sells it only as Spot (or Flex-start) VMs


def _bundled(prefix: str, accelerator: str, counts: tuple[int, ...], spot_only: tuple[int, ...] = ()
             ) -> dict[int, Shape]:
    return {n: Shape(f"{prefix}-{n}g", accelerator, n, spot_only=n in spot_only) for n in counts}


# (catalog GPU key) → {GPU count: Shape}. N1 types give each T4/V100 4 vCPUs (within Google's per-GPU limits).
SHAPES: dict[str, dict[int, Shape]] = {
    "t4": {n: Shape(f"n1-standard-{4 * n}", "nvidia-tesla-t4", n, attached=True) for n in (1, 2, 4)},
    "v100": {n: Shape(f"n1-standard-{4 * n}", "nvidia-tesla-v100", n, attached=True) for n in (1, 2, 4, 8)},
    "l4": {1: Shape("g2-standard-4", "nvidia-l4", 1), 2: Shape("g2-standard-24", "nvidia-l4", 2),
           4: Shape("g2-standard-48", "nvidia-l4", 4), 8: Shape("g2-standard-96", "nvidia-l4", 8)},
    "a100": {**_bundled("a2-highgpu", "nvidia-tesla-a100", (1, 2, 4, 8)),
             16: Shape("a2-megagpu-16g", "nvidia-tesla-a100", 16)},
    "a100-80g": _bundled("a2-ultragpu", "nvidia-a100-80gb", (1, 2, 4, 8)),
    # A3 High with 1, 2 or 4 GPUs is sold only as Spot or Flex-start (Google's A3 machine-series page).
    "h100": _bundled("a3-highgpu", "nvidia-h100-80gb", (1, 2, 4, 8), spot_only=(1, 2, 4)),
}

# USD per GPU-hour, us-central1, whole VM divided by its GPUs where both parts were read. Sources:
# [a] skypilot-org/skypilot-catalog catalogs/v9/gcp/vms.csv @2c3d7ea7 (the snapshot spec §8 cites; undated),
#     GPU rows plus the host rows of a2-highgpu-1g (0.73948) and a2-ultragpu-1g (1.09962);
# [b] spec providers.md §8: a3-highgpu-1g 10.98 incl. vCPU/RAM, us-central1, checked 2026-09-25/26.
# T4, V100 and L4 are the GPU part only ([a]); their N1/G2 host vCPU and memory come on top.
# [a]'s A100 80GB GPU figure (1.8462) is below its 40 GB one, so treat the a100-80g default as unverified.
# Prices move and differ per region: set providers.<name>.prices (and prices_as_of) from your own bill.
PRICES_AS_OF = "2026-09-25"
ON_DEMAND_USD: dict[str, Decimal] = {
    "t4": Decimal("0.35"),
    "v100": Decimal("2.48"),
    "l4": Decimal("0.56004"),
    "a100": Decimal("3.67339"),  # 0.73948 + 2.93391
    "a100-80g": Decimal("2.94582"),  # 1.09962 + 1.8462, unverified (see above)
    "h100": Decimal("10.98"),
}
SPOT_USD: dict[str, Decimal] = {  # [a]'s SpotPrice column, us-central1 (no H100 spot figure was read)
    "t4": Decimal("0.1915"),
    "v100": Decimal("1.2338"),
    "l4": Decimal("0.2862"),
    "a100": Decimal("1.92802"),  # 0.38812 + 1.5399
    "a100-80g": Decimal("2.73756"),  # 0.57716 + 2.1604
}

_ZONE = frozenset({"ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
                   "UNSUPPORTED_OPERATION", "insufficientCapacity", "RESOURCE_NOT_READY",
                   "RESOURCE_OPERATION_RATE_EXCEEDED"})
_QUOTA = frozenset({"QUOTA_EXCEEDED", "quotaExceeded"})
_RATE = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
_AUTH = frozenset({"authError", "forbidden", "accessNotConfigured", "SERVICE_DISABLED", "PERMISSIONS_ERROR"})
_INVALID = frozenset({"invalid", "badRequest", "notFound", "alreadyExists", "conflict", "required",
                      "invalidParameter", "INVALID_FIELD_VALUE", "RESOURCE_NOT_FOUND", "RESOURCE_ALREADY_EXISTS"})
_GLOBAL_QUOTA_MARKS = ("GPUS_ALL_REGIONS", "globally")


def shape_for(gpu: str, count: int) -> Shape | None:
    """The machine type that carries exactly `count` of `gpu`, or None."""
    return SHAPES.get(gpu, {}).get(count)


def shape_of(machine_type: str, accelerators: dict[str, int]) -> tuple[str, int]:
    """(gpu, count) of a machine type with its guest accelerators; ("", 0) when it carries none we know."""
    for gpu, by_count in SHAPES.items():
        for count, shape in by_count.items():
            # A bundled machine type carries its GPUs even when the instance does not list them.
            listed = accelerators.get(shape.accelerator, None if shape.attached or accelerators else count)
            if shape.machine_type == machine_type and listed == count:
                return gpu, count
    return "", 0


def price_per_gpu_hour(gpu: str, spot: bool, overrides: dict[str, Decimal]) -> Decimal | None:
    """The policy's price for the GPU, else the dated default (spot where one is known)."""
    if gpu in overrides:
        return overrides[gpu]
    return (SPOT_USD.get(gpu) if spot else None) or ON_DEMAND_USD.get(gpu)


def region_of(zone: str) -> str:
    """`us-central1` for `us-central1-a` (a zone is its region plus one suffix)."""
    return zone.rsplit("-", 1)[0]


def offer_ref(zone: str, machine_type: str) -> str:
    """An offer's vendor reference: `<zone>/<machine type>`."""
    return f"{zone}/{machine_type}"


def split_ref(ref: str) -> tuple[str, str]:
    """(zone, machine type) from an offer's reference."""
    zone, _, machine_type = ref.partition("/")
    return zone, machine_type


def classify(provider: str, code: str, message: str, zone: str | None = None, status: int | None = None
             ) -> ProviderError:
    """Our error for a Compute Engine error code or reason (see the module docstring)."""
    text = f"{code}: {message}" if message else code
    region = region_of(zone) if zone else None
    if code in _ZONE:
        return NoCapacity(provider, text, scope="offer", region=region)
    if code in _QUOTA:
        everywhere = any(mark in message for mark in _GLOBAL_QUOTA_MARKS) or region is None
        return QuotaExceeded(provider, text, scope="provider" if everywhere else "region", region=region)
    if code in _RATE or status == 429:
        return RateLimited(provider, text)
    if code in _AUTH or status == 401:
        return AuthFailed(provider, text)
    if code in _INVALID or code.startswith(("invalid", "INVALID")) or status in (400, 404, 409):
        return InvalidRequest(provider, text)
    return Transient(provider, text)
