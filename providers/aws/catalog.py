"""AWS EC2 vocabulary, pure: which instance type serves a GPU shape, what it costs, and how EC2 errors map.

Error codes (spec §5, §7, §10) → our tree:

    InsufficientInstanceCapacity, InsufficientHostCapacity, InsufficientReservedInstanceCapacity,
    InsufficientCapacity, UnfulfillableCapacity, Unsupported,
    InsufficientFreeAddressesInSubnet                         → per Availability Zone (ZONE_CAPACITY): the adapter
                                                                tries the region's other AZs; when every AZ said
                                                                so, NoCapacity(scope="region")
    MaxSpotInstanceCountExceeded                              → NoCapacity(scope="region")  (regional limit)
    SpotMaxPriceTooLow                                        → NoCapacity(scope="offer")   (this type only)
    InstanceLimitExceeded, VcpuLimitExceeded                  → QuotaExceeded
    AuthFailure, UnauthorizedOperation, InvalidClientTokenId,
    SignatureDoesNotMatch, OptInRequired, NoCredentials       → AuthFailed
    RequestLimitExceeded, Throttling, ThrottlingException     → RateLimited
    InvalidParameter*, InvalidAMIID*, other Invalid*/Missing* → InvalidRequest
    connection errors, timeouts, anything else                → Transient
"""

from __future__ import annotations

from decimal import Decimal

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, PartialCredentialsError
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
    "INSTANCE_TYPES",
    "ON_DEMAND_USD",
    "PRICES_AS_OF",
    "ZONE_CAPACITY",
    "gpu_shape",
    "instance_type_for",
    "map_boto_error",
    "map_error_code",
    "price_per_gpu_hour",
    "spot_price_per_gpu_hour",
]

# (catalog GPU key, GPU count) → EC2 instance type.
INSTANCE_TYPES: dict[tuple[str, int], str] = {
    ("a100", 8): "p4d.24xlarge",
    ("a100-80g", 8): "p4de.24xlarge",
    ("h100", 8): "p5.48xlarge",
    ("a10g", 1): "g5.xlarge", ("a10g", 4): "g5.12xlarge", ("a10g", 8): "g5.48xlarge",
    ("l40s", 1): "g6e.xlarge", ("l40s", 4): "g6e.12xlarge", ("l40s", 8): "g6e.48xlarge",
    ("t4", 1): "g4dn.xlarge", ("t4", 4): "g4dn.12xlarge",
    ("v100", 1): "p3.2xlarge", ("v100", 4): "p3.8xlarge", ("v100", 8): "p3.16xlarge",
}

# On-demand USD per instance-hour, us-east-1, Linux. Verified in spec §8: p4d/p4de/p5 (retrieved 2026-11-09
# [c]), g5.12xlarge and g4dn.xlarge (skypilot catalog [a], undated). Every other row is UNVERIFIED: AWS list
# prices as remembered, not re-read; set providers.<name>.prices to override per GPU-hour.
PRICES_AS_OF = "2026-11-09"
ON_DEMAND_USD: dict[str, Decimal] = {
    "p4d.24xlarge": Decimal("21.957642"),
    "p4de.24xlarge": Decimal("27.44705"),
    "p5.48xlarge": Decimal("55.04"),
    "g5.12xlarge": Decimal("5.672"),
    "g4dn.xlarge": Decimal("0.526"),
    "g5.xlarge": Decimal("1.006"),  # unverified
    "g5.48xlarge": Decimal("16.288"),  # unverified
    "g6e.xlarge": Decimal("1.861"),  # unverified
    "g6e.12xlarge": Decimal("10.493"),  # unverified
    "g6e.48xlarge": Decimal("30.131"),  # unverified
    "g4dn.12xlarge": Decimal("3.912"),  # unverified
    "p3.2xlarge": Decimal("3.06"),  # unverified
    "p3.8xlarge": Decimal("12.24"),  # unverified
    "p3.16xlarge": Decimal("24.48"),  # unverified
}

ZONE_CAPACITY = frozenset({
    "InsufficientInstanceCapacity", "InsufficientHostCapacity", "InsufficientReservedInstanceCapacity",
    "InsufficientCapacity", "UnfulfillableCapacity", "Unsupported", "InsufficientFreeAddressesInSubnet",
})
_REGION_CAPACITY = ZONE_CAPACITY | {"MaxSpotInstanceCountExceeded"}
_OFFER_CAPACITY = frozenset({"SpotMaxPriceTooLow"})
_QUOTA = frozenset({"InstanceLimitExceeded", "VcpuLimitExceeded"})
_AUTH = frozenset({"AuthFailure", "UnauthorizedOperation", "InvalidClientTokenId", "SignatureDoesNotMatch",
                   "OptInRequired", "Blocked"})
_THROTTLE = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException"})


def instance_type_for(gpu: str, count: int) -> str | None:
    """The instance type that carries exactly `count` of `gpu`, or None."""
    return INSTANCE_TYPES.get((gpu, count))


def gpu_shape(instance_type: str) -> tuple[str, int]:
    """(gpu, count) an instance type carries; ("", 0) for types not in the table."""
    return next((shape for shape, kind in INSTANCE_TYPES.items() if kind == instance_type), ("", 0))


def price_per_gpu_hour(gpu: str, count: int, overrides: dict[str, Decimal]) -> Decimal | None:
    """Policy price for the GPU, else the instance's on-demand price divided by its GPU count."""
    if gpu in overrides:
        return overrides[gpu]
    instance_type = instance_type_for(gpu, count)
    price = ON_DEMAND_USD.get(instance_type or "")
    return price / count if price is not None else None


def spot_price_per_gpu_hour(history: list[dict], count: int) -> dict[str, Decimal]:
    """The current spot price per GPU-hour in each Availability Zone, from DescribeSpotPriceHistory entries
    (the newest entry of each zone is its current price)."""
    newest: dict[str, dict] = {}
    for entry in history:
        zone = entry["AvailabilityZone"]
        if zone not in newest or entry["Timestamp"] > newest[zone]["Timestamp"]:
            newest[zone] = entry
    return {zone: Decimal(entry["SpotPrice"]) / count for zone, entry in newest.items()}


def map_error_code(provider: str, code: str, message: str, region: str | None = None) -> ProviderError:
    """Our error for an EC2 error code (see the module docstring)."""
    text = f"{code}: {message}" if message else code
    if code in _REGION_CAPACITY:
        return NoCapacity(provider, text, scope="region", region=region)
    if code in _OFFER_CAPACITY:
        return NoCapacity(provider, text, scope="offer", region=region)
    if code in _QUOTA:
        return QuotaExceeded(provider, text)
    if code in _AUTH:
        return AuthFailed(provider, text)
    if code in _THROTTLE:
        return RateLimited(provider, text)
    if code.startswith(("Invalid", "Missing", "UnknownParameter")):
        return InvalidRequest(provider, text)
    return Transient(provider, text)


def map_boto_error(provider: str, exc: Exception, region: str | None = None) -> ProviderError:
    """Our error for anything boto3 raises: ClientError by code, missing credentials, else Transient."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return map_error_code(provider, str(error.get("Code", "")), str(error.get("Message", "")), region)
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return AuthFailed(provider, type(exc).__name__)
    if isinstance(exc, BotoCoreError):
        return Transient(provider, f"{type(exc).__name__}: {exc}")
    return Transient(provider, repr(exc))
