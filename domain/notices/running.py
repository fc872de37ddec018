"""Notices about a running machine: idle reminders and reclaims, silent telemetry, expiry, overheat."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import ClassVar

from gpubot.domain.notices.base import NoticeAction, _AboutBooking

__all__ = ["ExpiryWarning", "IdleKept", "IdleReclaimed", "IdleReminder", "IdleSnoozed", "Overheat", "TelemetryStale",
           "UtilisationUnknown"]


@dataclass(frozen=True)
class IdleReminder(_AboutBooking):
    """The booking's GPUs are idle; it may be released after `grace` (None: reminders only)."""

    provider: str = ""
    idle_since: datetime | None = None
    idle_for: timedelta = timedelta(0)
    hourly: Decimal = Decimal(0)
    currency: str = "USD"
    release_in: timedelta | None = None
    previous: datetime | None = None  # the reminder before this one in the same idle stretch
    no_process: bool = False  # the no-process rule found it (no compute process holds the GPUs), not utilisation
    actions: ClassVar[tuple[NoticeAction, ...]] = (NoticeAction.KEEP, NoticeAction.SNOOZE, NoticeAction.RELEASE)

    @property
    def key(self) -> str:
        since = self.idle_since.isoformat() if self.idle_since else ""
        rule = "no-process:" if self.no_process else ""  # the two rules may remind of one stretch, once each
        return f"idle:{rule}{self.booking_id}:{since}:{self.previous.isoformat() if self.previous else 'first'}"


@dataclass(frozen=True)
class IdleReclaimed(_AboutBooking):
    """The idle booking was released; about `saved` of its booked time was not spent."""

    saved: Decimal = Decimal(0)
    currency: str = "USD"

    @property
    def key(self) -> str:
        return f"reclaimed:{self.booking_id}"


@dataclass(frozen=True)
class IdleKept(_AboutBooking):
    """The owner kept the idle booking: no more reminders for the idle stretch that began at `idle_since`."""

    idle_since: datetime | None = None

    @property
    def key(self) -> str:
        return f"kept:{self.booking_id}:{self.idle_since.isoformat() if self.idle_since else ''}"


@dataclass(frozen=True)
class IdleSnoozed(_AboutBooking):
    """Idle checks of the booking are snoozed `until` then."""

    until: datetime | None = None

    @property
    def key(self) -> str:
        return f"snoozed:{self.booking_id}:{self.until.isoformat() if self.until else ''}"


@dataclass(frozen=True)
class TelemetryStale(_AboutBooking):
    """No GPU telemetry for `silent_for`: idle and temperature checks are paused for the booking. It carries the
    line that starts the agent by hand (`agent_command`), empty as owed: it holds a fresh agent token, which the
    delivery worker mints as it hands the notice over, so no secret is ever stored in the outbox."""

    silent_for: timedelta = timedelta(0)
    agent_command: str = ""

    @property
    def key(self) -> str:
        return f"stale:{self.booking_id}"


@dataclass(frozen=True)
class UtilisationUnknown(_AboutBooking):
    """GPUs `gpu_indexes` report no utilisation (MIG enabled): the booking is never reclaimed as idle, while its
    temperature is still watched. Told once per booking."""

    gpu_indexes: tuple[int, ...] = ()

    @property
    def key(self) -> str:
        return f"util-unknown:{self.booking_id}"


@dataclass(frozen=True)
class ExpiryWarning(_AboutBooking):
    """The booking ends in `left` (at `ends_at`); `version` is the button value of the booking it shows."""

    ends_at: datetime | None = None
    left: timedelta = timedelta(0)
    offset: timedelta = timedelta(0)
    version: str = ""
    actions: ClassVar[tuple[NoticeAction, ...]] = (NoticeAction.EXTEND, NoticeAction.RELEASE)

    @property
    def key(self) -> str:
        ends = self.ends_at.isoformat() if self.ends_at else ""
        return f"expiry:{self.booking_id}:{ends}:{int(self.offset.total_seconds())}"


@dataclass(frozen=True)
class Overheat(_AboutBooking):
    """A GPU of the booking ran hot (the reading at `at`); on-call was paged and a replacement is offered."""

    temp_c: float = 0.0
    gpu_index: int = 0
    limit_c: float = 0.0
    util: float | None = 0.0  # None: the GPU reports none (MIG)
    provider: str = ""
    region: str = ""
    instance: str = ""
    at: datetime | None = None
    actions: ClassVar[tuple[NoticeAction, ...]] = (NoticeAction.REPLACE,)

    @property
    def key(self) -> str:
        # The reading's time: a GPU that cools down and runs hot again is a new overheat, told again.
        return f"overheat:{self.booking_id}:{self.gpu_index}:{self.at.isoformat() if self.at else ''}"
