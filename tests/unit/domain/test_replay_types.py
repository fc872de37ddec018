"""Trace GPU types nothing sells, and the mapping proposed for `[replay] gpu_types`."""

from __future__ import annotations

from gpubot.domain.replay_types import gpu_types_line, suggest_gpu_types, unsold_types

SOLD = {"v100", "a100", "rtx4090"}


def test_unsold_types_are_counted_per_job():
    assert unsold_types(["12GB", "v100", "12GB", "24GB"], SOLD) == {"12GB": 2, "24GB": 1}


def test_a_memory_class_maps_to_the_smallest_gpu_on_sale_with_that_much_memory():
    assert suggest_gpu_types(["12GB", "24GB", "32 GB", "96GB"], SOLD, {}) == {
        "12GB": "v100", "24GB": "rtx4090", "32 GB": "a100", "96GB": "a100"}


def test_a_catalog_gpu_maps_by_its_memory_and_a_renamed_type_keeps_the_traces_name():
    assert suggest_gpu_types(["h100"], SOLD, {}) == {"h100": "a100"}
    assert suggest_gpu_types(["l4"], SOLD, {"P100-16GB": "l4"}) == {"P100-16GB": "v100"}
    assert suggest_gpu_types(["K80"], SOLD, {}) == {"K80": "v100"}  # nothing known about it: the smallest


def test_the_line_is_toml():
    assert gpu_types_line({"24GB": "a100", "12GB": "v100"}) == 'gpu_types = { "12GB" = "v100", "24GB" = "a100" }'
