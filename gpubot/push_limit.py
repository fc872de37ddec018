"""The per-token rate limit on POST /api/telemetry (domain.ratelimit's token bucket, kept per process): an agent
token may push `health.pushes_per_interval` batches per agent interval on average and twice that at once; past
that the push is refused 429 with Retry-After, before its body is read into the ledger."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from gpubot.domain.policy import Policy
from gpubot.domain.ratelimit import Bucket, take
from gpubot.domain.telemetry import TelemetryRejected
from gpubot.scheduling.lifecycle.agent import agent_interval

__all__ = ["PushLimiter"]

MAX_KEYS = 20_000  # tokens remembered at once; the least recently seen are forgotten (refilled) first


class PushLimiter:
    """Buckets by token hash; `check` raises TelemetryRejected(429) for a push over the limit."""

    def __init__(self, policy: Callable[[], Policy], clock: Callable[[], float] = time.monotonic) -> None:
        self.policy, self.clock = policy, clock
        self._buckets: OrderedDict[str, Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, key: str) -> None:
        """Spend one push of `key`'s allowance, or refuse it."""
        policy = self.policy()
        per_interval = policy.health.pushes_per_interval
        rate, burst = per_interval / agent_interval(policy), 2 * per_interval
        with self._lock:
            bucket, wait = take(self._buckets.pop(key, None), self.clock(), rate, burst)
            self._buckets[key] = bucket
            while len(self._buckets) > MAX_KEYS:
                self._buckets.popitem(last=False)
        if wait is not None:
            raise TelemetryRejected(429, f"too many pushes for this token: at most {per_interval:g} per "
                                         f"{agent_interval(policy):g} s; try again in {wait} s", "rate_limited", wait)
