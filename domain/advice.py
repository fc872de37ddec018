"""Alternatives in one booking: their compact text form, and advice when a booking lands on another shape."""

from __future__ import annotations

import math

from gpubot.domain.catalog import GPUS

__all__ = ["decode_shapes", "encode_shapes", "shape_advice", "total_memory_gib"]

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


def _name(gpu: str, count: int) -> str:
    model = GPUS.get(gpu)
    return f"{count}× {model.display if model else gpu}"


def shape_advice(wanted: ShapePair, landed: ShapePair) -> str | None:
    """What to change in a training run that landed on `landed` instead of `wanted`; None when they are equal.

    The effective batch is per-GPU batch × GPUs × accumulation steps. When the landed shape has less memory in
    total, the per-step batch must shrink by that ratio, so accumulation over ⌈ratio⌉ steps keeps it.
    """
    if wanted == landed:
        return None
    want_mem, got_mem = total_memory_gib(*wanted), total_memory_gib(*landed)
    head = (f"Landed on {_name(*landed)} ({got_mem} GiB) instead of your first choice {_name(*wanted)} "
            f"({want_mem} GiB).")
    if not want_mem or not got_mem:
        return head + " Check that your run fits its memory."
    if got_mem < want_mem:
        steps = math.ceil(want_mem / got_mem)
        return (f"{head} It has {want_mem / got_mem:.2g}× less GPU memory: use mixed precision (bf16/fp16) and "
                f"gradient accumulation over {steps} steps (per-step batch ÷ {steps}) to keep the effective "
                f"batch size.")
    if landed[1] < wanted[1]:
        steps = math.ceil(wanted[1] / landed[1])
        return (f"{head} Fewer GPUs with as much memory: raise the per-GPU batch ×{steps} or accumulate "
                f"gradients over {steps} steps to keep the effective batch size; mixed precision (bf16) "
                f"makes up some of the lost throughput.")
    return f"{head} As much GPU memory or more: your batch settings carry over; throughput will differ."
