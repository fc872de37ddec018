"""A vendor listing read once per probe round: a short-lived, single-flight cache.

One acquisition round probes several shapes (the booking's first choice and its alternatives) at the same time,
and each shape asks the adapter for offers. A listing that does not depend on the shape (Lambda's instance types,
RunPod's GPU catalog for one GPU count) is fetched once and shared for `ttl` seconds; callers that arrive while
it is being fetched wait for that one fetch instead of sending their own. A failed fetch is not kept.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["RoundCache"]

T = TypeVar("T")


class RoundCache(Generic[T]):
    """Values by key, each fetched at most once per `ttl` seconds (by the injected monotonic clock)."""

    def __init__(self, ttl: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self._clock = ttl, clock
        self._entries: dict[Hashable, tuple[float, T]] = {}
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, key: Hashable, fetch: Callable[[], T]) -> T:
        """The value for `key`: a fresh one from the cache, else `fetch()` (one caller at a time per key)."""
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            entry = self._entries.get(key)
            if entry is not None and 0 <= self._clock() - entry[0] < self.ttl:
                return entry[1]
            value = fetch()
            self._entries[key] = (self._clock(), value)
            return value
