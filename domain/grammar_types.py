"""Types of the `/gpu` grammar: the limits it checks and the commands it returns (re-exported by grammar)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, tzinfo
from decimal import Decimal

from gpubot.domain.model import Shape

__all__ = [
    "MAX_TEXT",
    "AdminBudgetSet",
    "AdminProvider",
    "AdminRelease",
    "Book",
    "Budget",
    "Cancel",
    "Command",
    "Cost",
    "Extend",
    "Help",
    "Limits",
    "OpenBookModal",
    "Prices",
    "Queue",
    "Quote",
    "Release",
    "Shape",
    "Status",
    "Unwatch",
    "Watch",
    "Watches",
]

MAX_TEXT = 2000  # longer text is refused with a ParseError


@dataclass(frozen=True)
class Limits:
    """The parts of the team policy the grammar checks; passed in by the caller."""

    max_gpus: int = 16
    max_duration: timedelta = timedelta(hours=72)
    default_duration: timedelta = timedelta(hours=4)
    providers: tuple[str, ...] = ()  # configured provider names; empty = accept any
    night_start: time = time(23, 0)  # off-peak window in team time
    night_end: time = time(9, 0)
    team_tz: tzinfo = UTC


@dataclass(frozen=True)
class Help:
    """`/gpu help [topic]`, `/gpu` alone, or `--help` anywhere."""

    topic: str | None = None


@dataclass(frozen=True)
class Book:
    """`/gpu book a100x4 or h100x2 6h --spot ...`; start_at is aware UTC, None = now."""

    shape: Shape
    duration: timedelta
    alternatives: tuple[Shape, ...] = ()
    spot: bool = False
    provider: str | None = None
    region: str | None = None
    max_price: Decimal | None = None
    project: str | None = None
    start_at: datetime | None = None
    night: bool = False
    note: str | None = None
    cuda: str | None = None  # the lowest CUDA version wanted, `12.1`
    image: str | None = None


@dataclass(frozen=True)
class OpenBookModal:
    """`/gpu book` with no arguments: open the booking form."""


@dataclass(frozen=True)
class Status:
    """`/gpu status` (mine) or `/gpu status all` (everyone)."""

    everyone: bool = False


@dataclass(frozen=True)
class Queue:
    """`/gpu queue`."""


@dataclass(frozen=True)
class Cancel:
    """`/gpu cancel 12`."""

    booking_id: int


@dataclass(frozen=True)
class Release:
    """`/gpu release 12`."""

    booking_id: int


@dataclass(frozen=True)
class Extend:
    """`/gpu extend 12 2h`: add duration to a booking."""

    booking_id: int
    duration: timedelta


@dataclass(frozen=True)
class Quote:
    """`/gpu quote a100x4 6h`."""

    shape: Shape
    duration: timedelta
    alternatives: tuple[Shape, ...] = ()
    cuda: str | None = None


@dataclass(frozen=True)
class Prices:
    """`/gpu prices`."""


@dataclass(frozen=True)
class Cost:
    """`/gpu cost [today|week|month|YYYY-MM] [by user|project|provider|gpu]`."""

    period: str = "month"
    by: str | None = None


@dataclass(frozen=True)
class Budget:
    """`/gpu budget`."""


@dataclass(frozen=True)
class AdminRelease:
    """`/gpu admin release 12`: release anyone's booking."""

    booking_id: int


@dataclass(frozen=True)
class AdminProvider:
    """`/gpu admin provider pause|resume NAME`."""

    action: str
    provider: str


@dataclass(frozen=True)
class AdminBudgetSet:
    """`/gpu admin budget set SCOPE AMOUNT`; scope is `team`, `user:U123` or `project:NAME`."""

    scope: str
    amount: Decimal


@dataclass(frozen=True)
class Watch:
    """`/gpu watch h100x8 2h [--within 6h | --until 18:00] [--provider NAME]`: tell me when 8 H100 can start for
    2 h (`duration`, what Book now books); the watch lives `within` from now, or `until` (aware UTC), or else
    the policy's `booking.watch_for`."""

    shape: Shape
    provider: str | None = None
    duration: timedelta = timedelta(hours=4)
    within: timedelta | None = None
    until: datetime | None = None


@dataclass(frozen=True)
class Watches:
    """`/gpu watches` or `/gpu watch` alone: list my watches."""


@dataclass(frozen=True)
class Unwatch:
    """`/gpu unwatch 3`."""

    watch_id: int


@dataclass(frozen=True)
class Lang:
    """`/gpu lang zh|en` (choose), `/gpu lang auto` (forget the choice), `/gpu lang` (say which applies)."""

    language: str | None  # `en`, `zh`, `auto`, or None to ask


Command = (
    Help | Book | OpenBookModal | Status | Queue | Cancel | Release | Extend | Quote | Prices | Cost | Budget
    | AdminRelease | AdminProvider | AdminBudgetSet | Watch | Watches | Unwatch | Lang
)
