"""Build a real engine (real database, simulated clouds, recording notifier) for tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from gpubot.db.database import Database
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.policy import Policy
from gpubot.domain.ports import Provider
from gpubot.providers.registry import policy_from_dict
from gpubot.providers.simulated.adapter import SimulatedCloud
from gpubot.scheduling.engine import Engine

from tests.databases import MIGRATED
from tests.fakes.notifier import RecordingNotifier

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def migrated(url: str) -> Database:
    """The database at `url`, migrated to head (a test's ledger from the `database_url` fixture already is)."""
    db = Database(url)
    if url not in MIGRATED:
        db.upgrade()
    return db


def a_booking(**changes) -> Booking:
    """A requested booking of 4× A100 for 6 h by UALICE at T0, with `changes`."""
    base = Booking(id=0, owner="UALICE", gpu="a100", count=4, duration=timedelta(hours=6),
                   state=BookingState.REQUESTED, requested_at=T0)
    return base.with_(**changes)


def simulated_policy(**sections) -> Policy:
    """A policy with three simulated clouds (a, b, c) selling a100 at different prices, plus overrides."""
    providers = {
        name: {"kind": "simulated", "stock": [{"gpu": "a100", "region": f"{name}-1", "count": count,
                                                "price": price}]}
        for name, count, price in (("a", 8, 1.50), ("b", 8, 1.80), ("c", 8, 2.10))
    }
    raw = {"team": {"admins": ["UADMIN"], "alerts_channel": "CALERTS"}, "providers": providers}
    for key, value in sections.items():
        raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
    return policy_from_dict(raw)


@dataclass
class KitEngine(Engine):
    """The engine with the recording Slack channel its tests read beside it (`deliver` hands it the outbox): the
    engine itself knows no channel."""

    notifier: RecordingNotifier = field(default_factory=RecordingNotifier)


def make_engine(database_url: str, policy: Policy, clock: Callable, providers: dict[str, Provider] | None = None,
                sleep: Callable[[float], None] | None = None) -> KitEngine:
    """An engine on a migrated database; simulated providers from the policy unless given."""
    db = migrated(database_url)
    # The simulated clouds keep time (boot time, run seconds) on the engine's clock.
    built = providers if providers is not None else {
        name: SimulatedCloud(name, config, clock=lambda: clock().timestamp(), **({"sleep": sleep} if sleep else {}))
        for name, config in policy.enabled_providers().items()}
    return KitEngine(db=db, policy=policy, providers=built, clock=clock)


def running_booking(engine: Engine, gpus: int = 2, hours: int = 6, owner: str = "UALICE") -> Booking:
    """`gpus` A100s booked by `owner` for `hours` through the engine's own use cases, placed on the cheapest cloud."""
    from gpubot.scheduling.acquisition.acquire import acquire
    from gpubot.scheduling.booking.booking import BookingAsk, book

    booked = book(engine, BookingAsk(owner=owner, gpu="a100", count=gpus, duration=timedelta(hours=hours)))
    return acquire(engine, booked.booking.id)


def deliver(engine: Engine) -> int:
    """Run the outbox's delivery worker until nothing is due (as its thread would): the engine's notices reach
    its recording notifier, worded by the bot's renderers. How many were delivered."""
    from gpubot.scheduling.delivery import deliver_due

    total = 0
    while claimed := deliver_due(engine, {"slack": engine.notifier}):
        total += claimed
    return total
