"""The circuit-breaker rule for a provider, pure: state changes are computed from outcomes and `now`.

    closed ──K consecutive transient/rate-limited failures within `window`──▶ open
    open ──`cooldown` passed──▶ half-open (calls go through again, as a trial)
    half-open ──a success──▶ closed;  half-open ──a counted failure──▶ open (the cool-down starts over)

Any other answer (no capacity, quota, auth, invalid) shows the provider is up: it counts as a success here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

__all__ = ["COUNTED_KINDS", "BreakerRule", "BreakerState", "allows", "on_outcome", "state_at"]

COUNTED_KINDS = frozenset({"transient", "rate_limited"})


@dataclass(frozen=True)
class BreakerRule:
    """How many consecutive failures within how long open the breaker, and for how long it stays open."""

    failures: int = 5
    window: timedelta = timedelta(minutes=2)
    cooldown: timedelta = timedelta(seconds=60)


@dataclass(frozen=True)
class BreakerState:
    """One provider's breaker: `status` closed | open | half_open, recent failure times, when it opened."""

    status: str = "closed"
    failures: tuple[datetime, ...] = field(default_factory=tuple)
    opened_at: datetime | None = None


def state_at(state: BreakerState, now: datetime, rule: BreakerRule) -> BreakerState:
    """The breaker as it stands at `now`: an open one whose cool-down has passed is half-open."""
    if state.status == "open" and state.opened_at is not None and now - state.opened_at >= rule.cooldown:
        return replace(state, status="half_open")
    return state


def allows(state: BreakerState, now: datetime, rule: BreakerRule) -> bool:
    """Whether calls may go to the provider at `now`."""
    return state_at(state, now, rule).status != "open"


def on_outcome(state: BreakerState, kind: str | None, now: datetime, rule: BreakerRule) -> BreakerState:
    """The breaker after one outcome: `kind` is None for a success, else the error kind."""
    current = state_at(state, now, rule)
    if kind not in COUNTED_KINDS:
        return BreakerState() if current.status != "open" else current
    if current.status == "half_open":
        return BreakerState("open", (), now)
    if current.status == "open":
        return current
    recent = tuple(t for t in (*current.failures, now) if now - t <= rule.window)
    if len(recent) >= rule.failures:
        return BreakerState("open", (), now)
    return replace(current, failures=recent)
