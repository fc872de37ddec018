"""Pure GCP vocabulary: shapes per GPU count, prices, zones and regions, error classification, the insert body."""

from __future__ import annotations

from decimal import Decimal

import pytest
from gpubot.domain.catalog import GPUS
from gpubot.domain.errors import AuthFailed, InvalidRequest, NoCapacity, QuotaExceeded, RateLimited, Transient
from gpubot.providers.gcp.catalog import (
    ON_DEMAND_USD,
    SHAPES,
    classify,
    price_per_gpu_hour,
    region_of,
    shape_for,
    shape_of,
    split_ref,
)


@pytest.mark.parametrize(("gpu", "count", "machine_type", "attached"), [
    ("t4", 1, "n1-standard-4", True), ("t4", 2, "n1-standard-8", True), ("t4", 4, "n1-standard-16", True),
    ("l4", 1, "g2-standard-4", False), ("l4", 2, "g2-standard-24", False), ("l4", 8, "g2-standard-96", False),
    ("a100", 1, "a2-highgpu-1g", False), ("a100", 8, "a2-highgpu-8g", False), ("a100", 16, "a2-megagpu-16g", False),
    ("a100-80g", 1, "a2-ultragpu-1g", False), ("a100-80g", 8, "a2-ultragpu-8g", False),
    ("h100", 8, "a3-highgpu-8g", False), ("v100", 8, "n1-standard-32", True),
])
def test_shape_table(gpu: str, count: int, machine_type: str, attached: bool) -> None:
    shape = shape_for(gpu, count)
    assert shape is not None and (shape.machine_type, shape.attached, shape.count) == (machine_type, attached, count)
    listed = {shape.accelerator: count}
    assert shape_of(machine_type, listed) == (gpu, count)


def test_shapes_that_do_not_exist() -> None:
    assert shape_for("t4", 8) is None and shape_for("l4", 3) is None and shape_for("rtx4090", 1) is None
    assert shape_of("e2-standard-4", {}) == ("", 0)
    assert shape_of("n1-standard-4", {}) == ("", 0)  # an N1 without attached GPUs carries none


def test_a_bundled_machine_type_carries_its_gpus_even_when_not_listed() -> None:
    assert shape_of("a2-ultragpu-4g", {}) == ("a100-80g", 4)


def test_small_a3_shapes_are_spot_only() -> None:
    assert [n for n, s in SHAPES["h100"].items() if s.spot_only] == [1, 2, 4]
    assert not any(s.spot_only for gpu, by in SHAPES.items() if gpu != "h100" for s in by.values())


def test_every_gpu_is_in_the_catalog_and_has_a_default_price() -> None:
    assert set(SHAPES) <= set(GPUS)
    assert set(SHAPES) == set(ON_DEMAND_USD)


def test_prices_policy_first_then_spot_then_on_demand() -> None:
    assert price_per_gpu_hour("t4", False, {}) == Decimal("0.35")
    assert price_per_gpu_hour("t4", True, {}) == Decimal("0.1915")
    assert price_per_gpu_hour("h100", True, {}) == Decimal("10.98")  # no spot figure: the on-demand one
    assert price_per_gpu_hour("t4", True, {"t4": Decimal("0.5")}) == Decimal("0.5")
    assert price_per_gpu_hour("rtx4090", False, {}) is None


def test_zones_and_refs() -> None:
    assert region_of("us-central1-a") == "us-central1" and region_of("europe-west4-b") == "europe-west4"
    assert split_ref("us-central1-a/a2-highgpu-8g") == ("us-central1-a", "a2-highgpu-8g")


@pytest.mark.parametrize("code", ["ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",
                                  "UNSUPPORTED_OPERATION", "insufficientCapacity", "RESOURCE_NOT_READY",
                                  "RESOURCE_OPERATION_RATE_EXCEEDED"])
def test_zone_codes_are_no_capacity_in_that_zone(code: str) -> None:
    error = classify("gcp", code, "no resources", "us-central1-a")
    assert isinstance(error, NoCapacity) and (error.scope, error.region) == ("offer", "us-central1")


@pytest.mark.parametrize(("message", "scope"), [
    ("Quota 'NVIDIA_T4_GPUS' exceeded.  Limit: 1.0 in region us-central1.", "region"),
    ("Quota 'GPUS_ALL_REGIONS' exceeded.  Limit: 0.0 globally.", "provider"),
    ("Quota 'CPUS_ALL_REGIONS' exceeded.  Limit: 24.0 globally.", "provider"),
])
@pytest.mark.parametrize("code", ["QUOTA_EXCEEDED", "quotaExceeded"])
def test_quota_blocks_the_region_or_all_of_gcp(code: str, message: str, scope: str) -> None:
    error = classify("gcp", code, message, "us-central1-a", 403)
    assert isinstance(error, QuotaExceeded) and error.scope == scope
    assert error.region == "us-central1"


@pytest.mark.parametrize(("code", "status", "kind"), [
    ("rateLimitExceeded", 403, RateLimited), ("userRateLimitExceeded", 403, RateLimited), ("", 429, RateLimited),
    ("forbidden", 403, AuthFailed), ("", 401, AuthFailed), ("accessNotConfigured", 403, AuthFailed),
    ("invalid", 400, InvalidRequest), ("notFound", 404, InvalidRequest), ("alreadyExists", 409, InvalidRequest),
    ("backendError", 500, Transient), ("", 503, Transient), ("SOMETHING_NEW", None, Transient),
])
def test_other_codes(code: str, status: int | None, kind: type) -> None:
    assert type(classify("gcp", code, "m", "us-central1-a", status)) is kind
