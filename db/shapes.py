"""The column form of a booking's alternative shapes (`bookings.alternatives`): compact text, read and written
only here, at the ledger's edge; the domain and the engine see `domain.model.Shape`s."""

from __future__ import annotations

from collections.abc import Iterable

from gpubot.domain.model import Shape

__all__ = ["decode_shapes", "encode_shapes"]


def encode_shapes(shapes: Iterable[Shape]) -> str | None:
    """`(Shape("h100", 2), Shape("rtx4090", 8))` → `h100x2,rtx4090x8` (None for no shapes)."""
    return ",".join(str(shape) for shape in shapes) or None


def decode_shapes(text: str | None) -> tuple[Shape, ...]:
    """The inverse of encode_shapes; the GPU key may itself contain an `x` only before the last one."""
    shapes = []
    for part in (text or "").split(","):
        gpu, _, count = part.strip().rpartition("x")
        if gpu and count.isdigit():
            shapes.append(Shape(gpu, int(count)))
    return tuple(shapes)
