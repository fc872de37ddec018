"""The engine's dependencies in one object, and the small rules every use case shares."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import TypeVar
from zoneinfo import ZoneInfo

from gpubot.db.database import Database
from gpubot.domain.model import Offer
from gpubot.domain.money import convert
from gpubot.domain.policy import Policy
from gpubot.domain.ports import Clock, Pager, Provider
from gpubot.domain.pricing import Tier
from gpubot.providers.registry import kind_named
from gpubot.scheduling.memory import Memory

__all__ = ["Engine", "utc_now"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def utc_now() -> datetime:
    """The wall clock, timezone-aware UTC."""
    return datetime.now(UTC)


@dataclass
class Engine:
    """Everything a use case needs: the ledger, the clouds, the policy, the clock. It reaches people only through
    the notices it owes in the outbox (scheduling.delivery), which the delivery worker hands to their channels."""

    db: Database
    policy: Policy
    providers: dict[str, Provider]
    clock: Clock = utc_now
    public_url: str = "http://localhost:3000"
    agent_sha256: str | None = None  # SHA-256 of the agent served at public_url (None: no agent to deliver)
    memory: Memory = field(default_factory=Memory)
    probe_executor: Executor | None = None  # runs provider probes; None: scheduling.probe's thread pool
    pager: Pager | None = None  # PagerDuty, when configured: alerts page on-call there too
    shows_progress: bool = True  # progress lines for booking messages (a replay has no message to update)

    @property
    def team_tz(self) -> ZoneInfo:
        """The team's time zone."""
        return ZoneInfo(self.policy.team.timezone)

    @property
    def currency(self) -> str:
        """The team currency."""
        return self.policy.team.currency

    def now(self) -> datetime:
        """Current time, UTC."""
        return self.clock()

    def remembered(self, key: Hashable, ttl: float, compute: Callable[[], T], now: float | None = None) -> T:
        """`compute()`, remembered under `key` and reused while younger than `ttl` seconds, by `now` (the
        caller's clock in seconds; default the monotonic clock). Dropping the key forces a fresh one."""
        now = time.monotonic() if now is None else now
        hit = self.memory.remembered.get(key)
        if hit is not None and 0 <= now - hit[0] < ttl:
            return hit[1]
        value = compute()
        self.memory.remembered[key] = (now, value)
        return value

    def forget(self) -> None:
        """Drop everything this engine remembers (offers, prices, breakers): the next call starts afresh."""
        self.memory = Memory()

    def is_admin(self, user: str) -> bool:
        """True for the team's admins."""
        return user in self.policy.team.admins

    def may_change(self, owner: str, actor: str, oncall_too: bool = False) -> bool:
        """The one authorisation rule: owners and admins (and, where asked, on-call) may change a thing."""
        return actor == owner or self.is_admin(actor) or (oncall_too and actor in self.policy.team.oncall)

    def kind_of(self, provider: str) -> str:
        """The adapter kind of a configured provider."""
        config = self.policy.providers.get(provider)
        return config.kind if config else provider

    def team_owned(self, provider: str) -> bool:
        """True for a provider whose kind is the team's own machines (paid by the month, so taken first)."""
        return getattr(kind_named(self.kind_of(provider)), "team_owned", False)

    def bills_while_queued(self, provider: str) -> bool:
        """False for a provider whose kind bills nothing while its job waits in its own queue (billing and the
        booked time start when the machine starts running); True for every other (and an unknown) provider."""
        return getattr(kind_named(self.kind_of(provider)), "bills_while_queued", True)

    def to_team(self, amount: Decimal, currency: str) -> Decimal:
        """An amount in the team currency."""
        return convert(amount, currency, self.currency, self.policy.fx)

    def offer_price(self, offer: Offer) -> Decimal:
        """An offer's price per GPU-hour in the team currency."""
        return self.to_team(offer.price_per_gpu_hour, offer.currency)

    def tiers(self, provider: str | None) -> list[Tier]:
        """Discount tiers configured for a provider."""
        config = self.policy.providers.get(provider or "")
        return [Tier(d.after, d.percent) for d in config.discounts] if config else []
