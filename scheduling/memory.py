"""What one engine keeps in memory between calls (per process, never shared: what replicas must agree on lives in
the database): the providers' circuit breakers, recent offers, priced periods and remembered values.

It sits on the engine's own floor so that the engine can hold what acquisition fills in without importing it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gpubot.domain.breaker import BreakerRule, BreakerState, allows, on_outcome, state_at
from gpubot.scheduling.metrics import BREAKER_OPEN

__all__ = ["Breakers", "InFlight", "Memory", "OfferCache"]

log = logging.getLogger("gpubot.scheduling.acquisition.breakers")  # the logger operators already filter on


@dataclass
class Breakers:
    """The breakers of one engine, and every change of state they went through (for figures and logs)."""

    rule: BreakerRule = field(default_factory=BreakerRule)
    states: dict[str, BreakerState] = field(default_factory=dict)
    changes: list[tuple[str, str, str, datetime]] = field(default_factory=list)  # provider, from, to, at
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def status(self, provider: str, now: datetime) -> str:
        """closed, open or half_open at `now`."""
        with self._lock:
            return state_at(self.states.get(provider, BreakerState()), now, self.rule).status

    def allows(self, provider: str, now: datetime) -> bool:
        """Whether calls may go to `provider` now."""
        with self._lock:
            return allows(self.states.get(provider, BreakerState()), now, self.rule)

    def record(self, provider: str, kind: str | None, now: datetime) -> None:
        """Feed one outcome (None: success, else the error kind)."""
        with self._lock:
            before = state_at(self.states.get(provider, BreakerState()), now, self.rule)
            after = self.states[provider] = on_outcome(before, kind, now, self.rule)
            if after.status != before.status:
                self.changes.append((provider, before.status, after.status, now))
                log.warning("circuit breaker of %s: %s → %s", provider, before.status, after.status)
            BREAKER_OPEN.labels(provider).set(1 if after.status == "open" else 0)


class OfferCache:
    """Recent probe results per request, for `ttl` seconds."""

    def __init__(self, ttl: float, monotonic=time.monotonic) -> None:
        self.ttl, self._now = ttl, monotonic
        self._entries: dict[tuple, tuple[float, Any]] = {}

    def get(self, key: tuple) -> Any | None:
        """A fresh cached result, or None."""
        entry = self._entries.get(key)
        return entry[1] if entry and self._now() - entry[0] < self.ttl else None

    def put(self, key: tuple, result: Any) -> None:
        """Remember a result."""
        self._entries[key] = (self._now(), result)


class InFlight:
    """Bookings some thread of this process is working on now (counted: two threads may work on one)."""

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        self._lock = threading.Lock()

    def start(self, booking_id: int) -> None:
        """A thread starts on `booking_id`."""
        with self._lock:
            self._counts[booking_id] = self._counts.get(booking_id, 0) + 1

    def end(self, booking_id: int) -> None:
        """A thread is done with `booking_id`."""
        with self._lock:
            left = self._counts.get(booking_id, 0) - 1
            if left > 0:
                self._counts[booking_id] = left
            else:
                self._counts.pop(booking_id, None)

    def __contains__(self, booking_id: object) -> bool:
        with self._lock:
            return booking_id in self._counts

    @contextmanager
    def working_on(self, booking_id: int) -> Iterator[None]:
        """`start`, then `end` however the block leaves."""
        self.start(booking_id)
        try:
            yield
        finally:
            self.end(booking_id)


@dataclass
class Memory:
    """What one engine keeps in memory between calls, each in a home of its own type (per process, never shared:
    what replicas must agree on lives in the database)."""

    breakers: Breakers = field(default_factory=Breakers)
    offers: OfferCache | None = None  # made on first use with the policy's TTL (the replay brings its clock's)
    priced_periods: dict[tuple[datetime, datetime], Any] = field(default_factory=dict)  # scheduling.ledger_costs
    remembered: dict[Hashable, tuple[float, Any]] = field(default_factory=dict)  # Engine.remembered
    releasing: InFlight = field(default_factory=InFlight)  # releases this process is carrying out now
