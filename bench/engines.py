"""Engines for the in-process benchmarks: a real ledger, simulated clouds, a notifier that sends nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from gpubot.db.database import Database
from gpubot.domain.booking_view import BookingView
from gpubot.domain.notices import Notice
from gpubot.domain.policy import Policy
from gpubot.domain.ports import Delivery
from gpubot.providers.registry import policy_from_dict
from gpubot.providers.simulated.adapter import SimulatedCloud
from gpubot.scheduling.engine import Engine

__all__ = ["BenchClock", "SilentNotifier", "bench_engine", "bench_policy"]


class SilentNotifier:
    """Implements domain.ports.Notifier by counting calls; nothing leaves the process."""

    def __init__(self) -> None:
        self.sent = 0

    def deliver(self, notice: Notice, in_doubt: bool = False, booking: BookingView | None = None) -> Delivery:
        """Count."""
        self.sent += 1
        return Delivery("accepted")


class BenchClock:
    """A clock the benchmark moves by hand."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 11, 2, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> None:
        """Move the clock forward."""
        self.current += timedelta(**delta)


def bench_policy(providers: dict, **sections) -> Policy:
    """A policy with these providers and a budget no benchmark reaches."""
    raw = {"team": {"admins": ["UADMIN"], "alerts_channel": "CALERTS"}, "budget": {"monthly": 10**9},
           "booking": {"max_gpus_per_user": 100000}, "providers": providers, **sections}
    return policy_from_dict(raw)


def bench_engine(url: str, policy: Policy, clock: Callable[[], datetime] | None = None) -> Engine:
    """An engine on a migrated database with a simulated cloud per configured provider."""
    db = Database(url)
    db.upgrade()
    providers = {name: SimulatedCloud(name, config) for name, config in policy.enabled_providers().items()}
    return Engine(db=db, policy=policy, providers=providers, clock=clock or BenchClock())
