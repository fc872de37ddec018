"""The GPU catalog: canonical GPU names, the aliases people type, memory sizes and suggestions."""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass

__all__ = ["GPUS", "GpuModel", "closest", "normalize_gpu", "resolve_gpu", "suggest_gpu"]


@dataclass(frozen=True)
class GpuModel:
    """One GPU model: canonical key, display name, memory in GiB, aliases."""

    key: str
    display: str
    memory_gib: int
    aliases: tuple[str, ...] = ()


GPUS: dict[str, GpuModel] = {
    m.key: m
    for m in (
        GpuModel("a100", "A100 40GB", 40, ("a100-40g", "a100-40gb", "a10040g", "a100-sxm4")),
        GpuModel("a100-80g", "A100 80GB", 80, ("a100-80gb", "a10080g", "a100-80")),
        GpuModel("h100", "H100 80GB", 80, ("h100-80g", "h100-sxm", "h100-sxm5")),
        GpuModel("h800", "H800 80GB", 80, ("h800-80g",)),
        GpuModel("l40s", "L40S 48GB", 48, ()),
        GpuModel("l20", "L20 48GB", 48, ()),
        GpuModel("a10", "A10 24GB", 24, ()),
        GpuModel("a10g", "A10G 24GB", 24, ()),
        GpuModel("t4", "T4 16GB", 16, ()),
        GpuModel("l4", "L4 24GB", 24, ()),
        GpuModel("v100", "V100 16GB", 16, ("v100-16g",)),
        GpuModel("rtx4090", "RTX 4090 24GB", 24, ("4090", "rtx-4090", "rtx_4090")),
        GpuModel("rtx3090", "RTX 3090 24GB", 24, ("3090", "rtx-3090")),
        GpuModel("rtx5090", "RTX 5090 32GB", 32, ("5090", "rtx-5090")),
        GpuModel("rtxpro6000", "RTX PRO 6000 96GB", 96, ("pro6000", "rtx-pro-6000")),
    )
}

_ALIASES: dict[str, str] = {alias: m.key for m in GPUS.values() for alias in (m.key, *m.aliases)}


def normalize_gpu(text: str) -> str:
    """Fold look-alike characters, case and separators so `Ａ100_80G` reads as `a100-80g`."""
    folded = unicodedata.normalize("NFKC", text).lower().strip()
    return re.sub(r"[\s_]+", "-", folded)


def resolve_gpu(text: str) -> str | None:
    """Return the canonical key for a typed GPU name, or None when unknown."""
    name = normalize_gpu(text)
    return _ALIASES.get(name) or _ALIASES.get(name.replace("-", ""))


def closest(word: str, choices: list[str] | tuple[str, ...]) -> str | None:
    """The closest choice to a mistyped word, or None when nothing is near."""
    found = difflib.get_close_matches(word.lower(), list(choices), n=1, cutoff=0.5)
    return found[0] if found else None


def suggest_gpu(text: str) -> str | None:
    """Closest known GPU to a mistyped name (`a10o` → `a100`)."""
    name = normalize_gpu(text)
    guess = closest(name, list(_ALIASES))
    return _ALIASES[guess] if guess else None
