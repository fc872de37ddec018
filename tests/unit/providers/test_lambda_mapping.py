"""Lambda instance-type names → (catalog GPU, count), and prices per GPU-hour."""

from __future__ import annotations

from decimal import Decimal

import pytest
from gpubot.providers.lambda_cloud.adapter import parse_instance_type, price_per_gpu_hour
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(("name", "expected"), [
    ("gpu_1x_a100", ("a100", 1)),
    ("gpu_1x_a100_sxm4", ("a100", 1)),
    ("gpu_8x_a100_80gb_sxm4", ("a100-80g", 8)),
    ("gpu_8x_h100_sxm5", ("h100", 8)),
    ("gpu_8x_h100_sxm5gdr", ("h100", 8)),
    ("gpu_1x_h100_pcie", ("h100", 1)),
    ("gpu_1x_a10", ("a10", 1)),
    ("gpu_8x_v100", ("v100", 8)),
    ("gpu_8x_v100_n", ("v100", 8)),
])
def test_known_types(name: str, expected: tuple[str, int]) -> None:
    assert parse_instance_type(name) == expected


@pytest.mark.parametrize("name", ["gpu_1x_a6000", "gpu_1x_gh200", "gpu_8x_b200_sxm6", "gpu_0x_a10",
                                  "cpu_4x_general", "gpu_x_a100", "", "GPU_1X_A100"])
def test_types_outside_the_catalog_or_malformed(name: str) -> None:
    assert parse_instance_type(name) is None


@given(st.text(max_size=40))
def test_never_raises(name: str) -> None:
    result = parse_instance_type(name)
    assert result is None or result[1] > 0


@pytest.mark.parametrize(("cents", "count", "price"), [
    (3192, 8, "3.99"), (199, 1, "1.99"), (632, 8, "0.79"), (2232, 8, "2.79"), (3592, 8, "4.49")])
def test_price_per_gpu_hour(cents: int, count: int, price: str) -> None:
    assert price_per_gpu_hour(cents, count) == Decimal(price)
