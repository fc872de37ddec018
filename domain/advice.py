"""The GPU memory of a shape (the bot advises from it when a booking lands on another shape than its first
choice)."""

from __future__ import annotations

from gpubot.domain.catalog import GPUS

__all__ = ["total_memory_gib"]

def total_memory_gib(gpu: str, count: int) -> int:
    """GPU memory of a shape in GiB (0 for a GPU the catalog does not know)."""
    model = GPUS.get(gpu)
    return model.memory_gib * count if model else 0
