"""Pure AWS vocabulary: instance types, prices per GPU-hour, error-code mapping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)
from gpubot.domain.catalog import GPUS
from gpubot.domain.errors import AuthFailed, InvalidRequest, NoCapacity, QuotaExceeded, RateLimited, Transient
from gpubot.providers.aws.catalog import (
    INSTANCE_TYPES,
    ON_DEMAND_USD,
    gpu_shape,
    instance_type_for,
    map_boto_error,
    map_error_code,
    price_per_gpu_hour,
    spot_price_per_gpu_hour,
)


@pytest.mark.parametrize(("gpu", "count", "instance_type"), [
    ("a100", 8, "p4d.24xlarge"), ("a100-80g", 8, "p4de.24xlarge"), ("h100", 8, "p5.48xlarge"),
    ("a10g", 1, "g5.xlarge"), ("a10g", 4, "g5.12xlarge"), ("a10g", 8, "g5.48xlarge"),
    ("l40s", 1, "g6e.xlarge"), ("l40s", 4, "g6e.12xlarge"), ("l40s", 8, "g6e.48xlarge"),
    ("t4", 1, "g4dn.xlarge"), ("t4", 4, "g4dn.12xlarge"),
    ("v100", 1, "p3.2xlarge"), ("v100", 4, "p3.8xlarge"), ("v100", 8, "p3.16xlarge"),
])
def test_instance_type_table(gpu: str, count: int, instance_type: str) -> None:
    assert instance_type_for(gpu, count) == instance_type
    assert gpu_shape(instance_type) == (gpu, count)


def test_unsupported_shapes() -> None:
    assert instance_type_for("h100", 1) is None and instance_type_for("rtx4090", 1) is None
    assert gpu_shape("m5.large") == ("", 0)


def test_table_uses_catalog_keys_and_every_type_has_a_price() -> None:
    assert {gpu for gpu, _ in INSTANCE_TYPES} <= set(GPUS)
    assert set(INSTANCE_TYPES.values()) == set(ON_DEMAND_USD)


@pytest.mark.parametrize(("gpu", "count", "price"), [
    ("a100", 8, Decimal("2.74470525")), ("a100-80g", 8, Decimal("3.43088125")), ("h100", 8, Decimal("6.88")),
    ("a10g", 4, Decimal("1.418")), ("t4", 1, Decimal("0.526")),
])
def test_price_is_instance_price_over_gpu_count(gpu: str, count: int, price: Decimal) -> None:
    assert price_per_gpu_hour(gpu, count, {}) == price


def test_policy_price_wins_and_unknown_shape_has_none() -> None:
    assert price_per_gpu_hour("h100", 8, {"h100": Decimal("5")}) == Decimal("5")
    assert price_per_gpu_hour("h100", 2, {}) is None


@pytest.mark.parametrize("code", ["InsufficientInstanceCapacity", "InsufficientHostCapacity",
                                  "InsufficientReservedInstanceCapacity", "InsufficientCapacity",
                                  "UnfulfillableCapacity", "Unsupported", "MaxSpotInstanceCountExceeded"])
def test_capacity_codes_block_the_region(code: str) -> None:
    error = map_error_code("aws", code, "no p5 in us-east-1a", "us-east-1")
    assert isinstance(error, NoCapacity) and (error.scope, error.region) == ("region", "us-east-1")
    assert "us-east-1a" in str(error)


@pytest.mark.parametrize(("code", "kind"), [
    ("SpotMaxPriceTooLow", NoCapacity),
    ("InstanceLimitExceeded", QuotaExceeded), ("VcpuLimitExceeded", QuotaExceeded),
    ("AuthFailure", AuthFailed), ("UnauthorizedOperation", AuthFailed), ("InvalidClientTokenId", AuthFailed),
    ("RequestLimitExceeded", RateLimited), ("Throttling", RateLimited),
    ("InvalidParameterValue", InvalidRequest), ("InvalidParameterCombination", InvalidRequest),
    ("InvalidAMIID.NotFound", InvalidRequest), ("InvalidAMIID.Malformed", InvalidRequest),
    ("InternalError", Transient), ("SomethingNew", Transient),
])
def test_other_codes(code: str, kind: type) -> None:
    assert type(map_error_code("aws", code, "")) is kind


def test_spot_price_too_low_blocks_only_the_offer() -> None:
    assert map_error_code("aws", "SpotMaxPriceTooLow", "", "us-east-1").scope == "offer"


@pytest.mark.parametrize(("exc", "kind"), [
    (ClientError({"Error": {"Code": "VcpuLimitExceeded", "Message": "x"}}, "RunInstances"), QuotaExceeded),
    (NoCredentialsError(), AuthFailed),
    (EndpointConnectionError(endpoint_url="https://ec2"), Transient),
    (ReadTimeoutError(endpoint_url="https://ec2"), Transient),
    (ConnectTimeoutError(endpoint_url="https://ec2"), Transient),
])
def test_boto_exceptions(exc: Exception, kind: type) -> None:
    assert type(map_boto_error("aws", exc, "us-east-1")) is kind


def test_the_current_spot_price_of_each_zone_is_its_newest() -> None:
    at = datetime(2026, 11, 30, 12, tzinfo=UTC)
    history = [{"AvailabilityZone": "us-east-1a", "SpotPrice": "20.0", "Timestamp": at},
               {"AvailabilityZone": "us-east-1a", "SpotPrice": "99.0", "Timestamp": at - timedelta(hours=3)},
               {"AvailabilityZone": "us-east-1b", "SpotPrice": "24.8", "Timestamp": at - timedelta(hours=1)}]
    assert spot_price_per_gpu_hour(history, 8) == {"us-east-1a": Decimal("2.5"), "us-east-1b": Decimal("3.1")}
