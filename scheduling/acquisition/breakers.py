"""Per-provider circuit breakers, kept in the engine (one set per process) and consulted before launching.

The rule is `domain.breaker`; this module holds each provider's state, feeds it the outcome of every probe and
launch, exports it as `gpubot_provider_breaker_open`, and logs every change of state.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from gpubot.domain.breaker import BreakerRule, BreakerState, allows, on_outcome, state_at
from gpubot.scheduling.metrics import BREAKER_OPEN

if TYPE_CHECKING:  # the engine holds the breakers: a runtime import would run in a circle
    from gpubot.scheduling.engine import Engine

__all__ = ["Breakers", "breakers_of", "closed_to", "record"]

log = logging.getLogger(__name__)


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


def breakers_of(engine: Engine) -> Breakers:
    """The engine's breakers."""
    return engine.memory.breakers


def record(engine: Engine, provider: str, kind: str | None) -> None:
    """Feed one outcome of `provider` to its breaker."""
    breakers_of(engine).record(provider, kind, engine.now())


def closed_to(engine: Engine, providers: dict) -> dict:
    """The providers whose breaker lets calls through now."""
    breakers, now = breakers_of(engine), engine.now()
    return {name: p for name, p in providers.items() if breakers.allows(name, now)}
