"""Notices about money: approvals and launch holds, budget crossings, and the daily digest's figures and rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import ClassVar, NamedTuple

from gpubot.domain.notices.base import Audience, Notice, NoticeAction, _AboutBooking

__all__ = [
    "AlertRow", "ApprovalDecided", "ApprovalNeeded", "AttemptsRow", "BookingRow", "BudgetCrossed", "CheckRow",
    "DigestChart", "DigestReady", "GroupRow", "LaunchHeld", "WasteRow",
]


@dataclass(frozen=True)
class ApprovalNeeded(_AboutBooking):
    """An admin (`to`) is asked to let `owner`'s booking go over budget: it would pass the `passed` budgets."""

    owner: str = ""
    duration: timedelta = timedelta(0)
    why: str = ""  # English, in rows owed before the facts below were kept
    passed: tuple[tuple[str, Decimal, Decimal], ...] = ()  # (scope, would reach, limit) of each budget passed
    currency: str = "USD"
    actions: ClassVar[tuple[NoticeAction, ...]] = (NoticeAction.APPROVE, NoticeAction.DENY)

    @property
    def key(self) -> str:
        return f"approval:{self.booking_id}:{self.to}"


@dataclass(frozen=True)
class ApprovalDecided(_AboutBooking):
    """An admin approved (or denied) the owner's over-budget booking."""

    admin: str = ""
    approved: bool = True

    @property
    def key(self) -> str:
        return f"{'approved' if self.approved else 'denied'}:{self.booking_id}"


@dataclass(frozen=True)
class LaunchHeld(_AboutBooking):
    """Budgets or prices changed since booking: at launch the booking would pass the `passed` budgets, so it is
    held for an admin (`held`) or refused."""

    why: str = ""  # English, in rows owed before the facts below were kept
    passed: tuple[tuple[str, Decimal, Decimal], ...] = ()  # (scope, would reach, limit) of each budget passed
    currency: str = "USD"
    held: bool = True

    @property
    def key(self) -> str:
        return f"launch-held:{self.booking_id}:{'held' if self.held else 'refused'}"


@dataclass(frozen=True)
class BudgetCrossed(Notice):
    """A budget `scope` passed the threshold `percent` in `period`: `spent` plus `committed` (what its running
    bookings still cost) is `reached` % of `limit`. With a `forecast`, the month-end forecast passes the limit
    instead (`reached` % of it). `to` is a person, or the digest channel."""

    to: str
    scope: str
    percent: int
    spent: Decimal = Decimal(0)
    limit: Decimal = Decimal(0)
    currency: str = "USD"
    period: str = ""
    committed: Decimal = Decimal(0)
    reached: int = 0
    forecast: Decimal | None = None

    @property
    def key(self) -> str:
        passed = "forecast" if self.forecast is not None else self.percent
        return f"budget:{self.scope}:{self.period}:{passed}:{self.to}"


class GroupRow(NamedTuple):
    """One row of a digest table: a user, project or provider, and its figures of the day."""

    name: str
    spend: Decimal
    gpu_hours: Decimal
    idle_gpu_hours: Decimal
    waste: Decimal


class WasteRow(NamedTuple):
    """Idle GPU time of one booking on the digest's day."""

    booking_id: int
    owner: str
    idle_gpu_hours: Decimal
    waste: Decimal


class BookingRow(NamedTuple):
    """A booking the digest lists: running (on `provider` until `until`), waiting (in `state` since `waited`
    ago, or scheduled to start at `until`), or failed (`failure`, and the attempts it `tried` as data, which the
    bot words in the reader's language)."""

    booking_id: int
    count: int
    gpu: str
    owner: str
    provider: str = ""
    state: str = ""
    until: datetime | None = None
    waited: timedelta = timedelta(0)
    failure: str = ""  # the ledger's English failure column (what operators read)
    tried: tuple[tuple[str, str, str], ...] = ()  # a failed booking's last attempts: (provider, region, outcome kind)


class AttemptsRow(NamedTuple):
    """Failed launch attempts of the day on one provider and region (`what`)."""

    what: str
    attempts: int


class AlertRow(NamedTuple):
    """An alert raised on the digest's day."""

    kind: str
    summary: str


class CheckRow(NamedTuple):
    """A provider's reported cost (`basis` total or rate) that disagreed with ours by `diff_percent`."""

    booking_id: int
    provider: str
    basis: str
    theirs: Decimal
    ours: Decimal
    currency: str
    diff_percent: Decimal


@dataclass(frozen=True)
class DigestReady(Notice):
    """The daily digest of `period` (a day, YYYY-MM-DD in the team's time zone) for a channel, as figures and
    rows: the bot words it. `daily` is the month's spend day by day, from its first day through `period`.
    (Rows are named tuples; after the outbox they come back as plain tuples, equal to them.)"""

    audience: ClassVar[Audience] = Audience.CHANNEL
    channel: str
    period: str
    currency: str = "USD"
    spent: Decimal = Decimal(0)
    gpu_hours: Decimal = Decimal(0)
    idle_gpu_hours: Decimal = Decimal(0)
    waste: Decimal = Decimal(0)
    month: str = ""
    month_spent: Decimal = Decimal(0)
    month_limit: Decimal = Decimal(0)
    month_forecast: Decimal = Decimal(0)
    daily: tuple[Decimal, ...] = ()
    by_user: tuple[GroupRow, ...] = ()
    by_project: tuple[GroupRow, ...] = ()
    by_provider: tuple[GroupRow, ...] = ()
    top_waste: tuple[WasteRow, ...] = ()
    active: tuple[BookingRow, ...] = ()
    waiting: tuple[BookingRow, ...] = ()
    failed: tuple[BookingRow, ...] = ()
    attempts: tuple[AttemptsRow, ...] = ()
    alerts: tuple[AlertRow, ...] = ()
    cost_checks: tuple[CheckRow, ...] = ()

    @property
    def key(self) -> str:
        return f"digest:{self.channel}:{self.period}"

    @property
    def quiet(self) -> bool:
        """True when nothing happened: no spend, nothing running or waiting, no failure, alert or disagreement."""
        return not (self.spent or self.gpu_hours or self.active or self.waiting or self.failed or self.attempts
                    or self.alerts or self.cost_checks)


@dataclass(frozen=True)
class DigestChart(Notice):
    """The chart of a digest (the same figures as its DigestReady), shared in its channel as an image: a notice of
    its own, so a failed upload is tried again without posting the digest again, and the other way round."""

    audience: ClassVar[Audience] = Audience.CHANNEL
    channel: str
    period: str
    month: str = ""
    currency: str = "USD"
    month_spent: Decimal = Decimal(0)
    month_limit: Decimal = Decimal(0)
    month_forecast: Decimal = Decimal(0)
    daily: tuple[Decimal, ...] = ()

    @property
    def key(self) -> str:
        return f"digest-chart:{self.channel}:{self.period}"
