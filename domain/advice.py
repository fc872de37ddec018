"""Alternatives in one booking: their compact text form, and the GPU memory of a shape (the bot advises from it
when a booking lands on another shape than its first choice)."""

from __future__ import annotations

from gpubot.domain.catalog import GPUS

__all__ = ["decode_shapes", "encode_shapes", "total_memory_gib"]

ShapePair = tuple[str, int]  # (catalog GPU key, count)


def encode_shapes(shapes: list[ShapePair] | tuple[ShapePair, ...]) -> str | None:
    """`[("h100", 2), ("rtx4090", 8)]` → `h100x2,rtx4090x8` (None for no shapes)."""
    return ",".join(f"{gpu}x{count}" for gpu, count in shapes) or None


def decode_shapes(text: str | None) -> list[ShapePair]:
    """The inverse of encode_shapes; the GPU key may itself contain an `x` only before the last one."""
    pairs = []
    for part in (text or "").split(","):
        gpu, _, count = part.strip().rpartition("x")
        if gpu and count.isdigit():
            pairs.append((gpu, int(count)))
    return pairs


def total_memory_gib(gpu: str, count: int) -> int:
    """GPU memory of a shape in GiB (0 for a GPU the catalog does not know)."""
    model = GPUS.get(gpu)
    return model.memory_gib * count if model else 0
