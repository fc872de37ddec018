"""A token bucket: each key (an agent token) may act `rate` times a second on average, `burst` times at once.
Pure: the caller keeps the buckets and the clock (gpubot/server.py, per process)."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Bucket", "take"]


@dataclass(frozen=True)
class Bucket:
    """What is left of a key's allowance (`tokens`) as of `at` (seconds, any monotonic clock)."""

    tokens: float
    at: float


def take(bucket: Bucket | None, now: float, rate: float, burst: float) -> tuple[Bucket, int | None]:
    """Spend one action from `bucket` (None: a key not seen yet, full); the bucket after it and None when allowed,
    else the bucket unchanged but refilled and the whole seconds to wait before one is allowed (Retry-After)."""
    tokens = burst if bucket is None else min(burst, bucket.tokens + max(0.0, now - bucket.at) * rate)
    if tokens >= 1:
        return Bucket(tokens - 1, now), None
    return Bucket(tokens, now), max(1, math.ceil((1 - tokens) / rate))
