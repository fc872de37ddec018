"""Bounds on POST /api/telemetry. The per-token rate limit (domain.ratelimit's token bucket, kept per process): an
agent token may push `health.pushes_per_interval` batches per agent interval on average and twice that at once;
past that the push is refused 429 with Retry-After. The disk guard: when a SQLite ledger's disk has less than
`retention.min_free_disk_mb` free, telemetry is refused first (503, reason disk_low), so booking, release and
billing keep the room; /readyz says not ready (check `disk`, with the reason), `gpubot_ledger_disk_low` is 1 and
`gpubot_ledger_disk_free_bytes` says how much is left."""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from gpubot.domain.policy import Policy
from gpubot.domain.ratelimit import Bucket, take
from gpubot.domain.telemetry import TelemetryRejected
from gpubot.scheduling.agent import agent_interval
from gpubot.scheduling.metrics import LEDGER_DISK_FREE, LEDGER_DISK_LOW

__all__ = ["DiskGuard", "PushLimiter"]

log = logging.getLogger(__name__)

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


class DiskGuard:
    """Refuses telemetry while a SQLite ledger's disk is nearly full (looked at most every `every` seconds); a
    PostgreSQL ledger's disk is the database server's, not seen from here."""

    def __init__(self, url: str, min_free_mb: Callable[[], int], *, usage=shutil.disk_usage,
                 clock: Callable[[], float] = time.monotonic, every: float = 5.0) -> None:
        self.folder = _sqlite_folder(url)
        self.min_free_mb, self.usage, self.clock, self.every = min_free_mb, usage, clock, every
        self._seen: tuple[float, int] | None = None  # (when, free bytes)

    def free_bytes(self) -> int | None:
        """Free bytes on the ledger's disk (None: not a SQLite file)."""
        if self.folder is None:
            return None
        now = self.clock()
        if self._seen is None or now - self._seen[0] >= self.every:
            try:
                free = int(self.usage(self.folder).free)
            except OSError as exc:  # the folder cannot be read: unknown, never a reason to refuse or fail
                log.warning("cannot read the free space of %s: %s", self.folder, exc)
                return None
            self._seen = (now, free)
            LEDGER_DISK_FREE.set(free)
        return self._seen[1]

    def problem(self) -> str | None:
        """Why the disk is too full for telemetry (None: it has room, or the ledger is not a SQLite file); sets
        `gpubot_ledger_disk_low`."""
        free, minimum = self.free_bytes(), self.min_free_mb()
        low = free is not None and free < minimum * 2**20
        LEDGER_DISK_LOW.set(1 if low else 0)
        if not low:
            return None
        return (f"the ledger's disk has {free // 2**20} MB free (under retention.min_free_disk_mb = {minimum} MB): "
                "telemetry is refused so bookings and billing keep the room")

    def check(self) -> None:
        """Refuse a push while the disk has less than the minimum free."""
        problem = self.problem()
        if problem is not None:
            raise TelemetryRejected(503, problem, "disk_low", 60)


def _sqlite_folder(url: str) -> Path | None:
    if not url.startswith("sqlite:///") or url.endswith(":memory:"):
        return None
    path = Path(url.removeprefix("sqlite:///").split("?", 1)[0].removeprefix("file:"))  # a URI filename too
    return path.parent if str(path) else None
