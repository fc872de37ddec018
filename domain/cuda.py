"""CUDA versions as people write them (`12.1`): checking, comparing, and the vendor integer form (121)."""

from __future__ import annotations

import re

__all__ = ["CUDA_RANGE", "cuda_int", "cuda_meets", "cuda_shortfall", "cuda_version"]

CUDA_RANGE = ((8, 0), (19, 9))  # versions outside this are typos, not CUDA releases
_VERSION = re.compile(r"^([0-9]{1,2})\.([0-9])$")


def cuda_version(text: str) -> tuple[int, int]:
    """(major, minor) of `12.1`; ValueError naming the expected form otherwise."""
    found = _VERSION.match(text.strip().lower().removeprefix("cuda").strip())
    value = (int(found[1]), int(found[2])) if found else None
    if value is None or not CUDA_RANGE[0] <= value <= CUDA_RANGE[1]:
        raise ValueError(f"a CUDA version like 12.1 (from {CUDA_RANGE[0][0]}.0 to {CUDA_RANGE[1][0]}.9)")
    return value


def cuda_int(text: str) -> int:
    """AutoDL's integer form: `12.1` → 121, `11.8` → 118."""
    major, minor = cuda_version(text)
    return major * 10 + minor


def cuda_meets(max_cuda: str | None, floor: str | None) -> bool:
    """True unless both are known and the highest CUDA an offer runs is below the floor asked for."""
    if not max_cuda or not floor:
        return True
    return cuda_version(max_cuda) >= cuda_version(floor)


def cuda_shortfall(max_cuda: str | None, floor: str | None) -> str | None:
    """Why an offer cannot meet a CUDA floor (`max CUDA 11.8 < 12.1`), or None when it can (or is unknown)."""
    return None if cuda_meets(max_cuda, floor) else f"max CUDA {max_cuda} < {floor}"
