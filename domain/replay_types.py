"""GPU types of a replay trace that no configured cloud sells, and the `[replay] gpu_types` line that maps them.

A trace names GPUs its own way (Philly: `12GB`, `24GB`); a job whose type no cloud sells can only fail. Before
replaying, those types are found and a mapping is proposed: for a type that names a memory size, the smallest
GPU on sale with at least that much memory; for a catalog GPU, the one on sale closest in memory.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping

from gpubot.domain.catalog import GPUS, resolve_gpu

__all__ = ["gpu_types_line", "suggest_gpu_types", "unsold_types"]

_MEMORY = re.compile(r"([0-9]+)\s*(?:gb|gib|g)\b", re.IGNORECASE)


def unsold_types(types: Iterable[str], sold: set[str]) -> Counter[str]:
    """How many jobs ask for each GPU type (as mapped) that nothing sells."""
    return Counter(t for t in types if t not in sold)


def _memory(name: str) -> int | None:
    found = _MEMORY.search(name)
    if found:
        return int(found.group(1))
    key = resolve_gpu(name)
    return GPUS[key].memory_gib if key else None


def _closest(memory: int | None, sold: list[str]) -> str:
    sizes = sorted((GPUS[g].memory_gib, g) for g in sold if g in GPUS) or [(0, g) for g in sorted(sold)]
    if memory is None:
        return sizes[0][1]
    big_enough = [g for size, g in sizes if size >= memory]
    return big_enough[0] if big_enough else sizes[-1][1]


def suggest_gpu_types(unsold: Iterable[str], sold: set[str], mapped: Mapping[str, str]) -> dict[str, str]:
    """trace type → a type on sale, for each unsold type (keyed by the trace's own name when `mapped` renamed it)."""
    original = {ours: theirs for theirs, ours in mapped.items()}
    return {original.get(t, t): _closest(_memory(original.get(t, t)), sorted(sold)) for t in unsold}


def gpu_types_line(mapping: Mapping[str, str]) -> str:
    """`gpu_types = { "12GB" = "v100", "24GB" = "a100" }` as TOML."""
    pairs = ", ".join(f'"{theirs}" = "{ours}"' for theirs, ours in sorted(mapping.items()))
    return f"gpu_types = {{ {pairs} }}"
