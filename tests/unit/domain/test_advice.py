"""The GPU memory of a shape."""

from __future__ import annotations

from gpubot.domain.advice import total_memory_gib


def test_memory_comes_from_the_catalog():
    assert total_memory_gib("a100-80g", 2) == 160 and total_memory_gib("nonsense", 2) == 0
