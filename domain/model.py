"""Plain data of the domain: bookings, offers, instances, usage intervals and their states."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum

from gpubot.domain.errors import ParseError

__all__ = [
    "ACTIVE_STATES",
    "FINAL_STATES",
    "Booking",
    "BookingState",
    "Instance",
    "Offer",
    "OfferRequest",
    "Shape",
    "UsageInterval",
    "button_value",
    "instance_tag",
    "parse_button_value",
    "parse_instance_tag",
]


@dataclass(frozen=True)
class Shape:
    """A GPU model (canonical catalog key) and how many of it: `Shape("a100", 4)` (a booking's first choice is its
    `gpu` and `count`; its alternatives are shapes)."""

    gpu: str
    count: int

    def __str__(self) -> str:
        return f"{self.gpu}x{self.count}"


class BookingState(StrEnum):
    """Where a booking is in its life."""

    REQUESTED = "requested"
    AWAITING_APPROVAL = "awaiting_approval"
    SCHEDULED = "scheduled"
    QUEUED = "queued"
    ACQUIRING = "acquiring"
    BOOTING = "booting"  # launched (and billed), not reachable yet: the engine follows it until it is
    ACTIVE = "active"
    RELEASING = "releasing"
    RELEASED = "released"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINAL_STATES = frozenset({BookingState.RELEASED, BookingState.FAILED, BookingState.CANCELLED})
# The states in which a booking holds an instance (booting ones too: launched, billed, counted against limits).
ACTIVE_STATES = frozenset({BookingState.BOOTING, BookingState.ACTIVE, BookingState.RELEASING})


@dataclass(frozen=True)
class OfferRequest:
    """What a booking asks of the clouds."""

    gpu: str
    count: int
    spot: bool = False
    provider: str | None = None
    region: str | None = None
    max_price: Decimal | None = None
    cuda: str | None = None  # the lowest CUDA version the machine must run (`12.1`)


@dataclass(frozen=True)
class Offer:
    """One way a provider could serve a request, at a price per GPU-hour."""

    provider: str
    region: str
    gpu: str
    count: int
    price_per_gpu_hour: Decimal
    currency: str
    spot: bool = False
    available: bool = True
    # Available, but not at once: the job would wait in the provider's own queue (a Slurm partition that can hold
    # the request but is busy now) until the provider starts it.
    queued: bool = False
    ref: str = ""  # the vendor's own name for what to launch (instance type, spec id, pod GPU id)
    max_cuda: str | None = None  # the highest CUDA version it runs, when the vendor says


@dataclass(frozen=True)
class Instance:
    """A machine a provider runs for us."""

    provider: str
    instance_id: str
    name: str
    region: str = ""
    status: str = "unknown"
    ready: bool = False
    ssh: str | None = None
    gpu: str = ""
    count: int = 0
    cost_so_far: Decimal | None = None
    stopped_at: datetime | None = None  # when the provider stopped it (a preemption), if it says
    # Why it waits in the provider's own queue (Slurm's reason: Resources, Priority), and when the provider
    # expects it to start (squeue --start), while it has not started; None for a machine that is simply booting.
    waiting: str | None = None
    expected_start: datetime | None = None
    # When the provider started running it, if it says (Slurm's StartTime of a running job): where the bill of a
    # provider that bills nothing while queued starts (domain.queued_billing).
    running_since: datetime | None = None
    extra: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Booking:
    """A person's request for GPUs and what became of it."""

    id: int
    owner: str
    gpu: str
    count: int
    duration: timedelta
    state: BookingState
    requested_at: datetime
    project: str | None = None
    spot: bool = False
    provider_wanted: str | None = None
    region_wanted: str | None = None
    max_price: Decimal | None = None
    start_at: datetime | None = None
    note: str | None = None
    provider: str | None = None
    region: str | None = None
    instance_id: str | None = None
    instance_name: str | None = None
    price_per_gpu_hour: Decimal | None = None
    currency: str | None = None
    started_at: datetime | None = None
    ends_at: datetime | None = None
    released_at: datetime | None = None
    channel: str | None = None
    message_ts: str | None = None
    failure: str | None = None
    connect: str | None = None
    idle_since: datetime | None = None
    idle_reminded_at: datetime | None = None
    idle_kept_since: datetime | None = None
    idle_rule: str | None = None  # the rule of the last idle reminder: "idle" (utilisation) or "no_process"
    snoozed_until: datetime | None = None
    alternatives: tuple[Shape, ...] = ()  # other shapes that would do, in the order asked
    cuda: str | None = None
    image: str | None = None
    replaces: int | None = None  # the overheating booking this one replaces
    avoid: str | None = None  # `provider/region` not to land on (where the booking it replaces runs)
    estimate: Decimal | None = None  # team currency held against budgets until it runs (domain.commitment)
    approved_by: str | None = None  # the admin who let it go over budget (not checked again at launch)
    ready_at: datetime | None = None  # when its instance became reachable (started_at is the launch)
    boot_polls: int = 0  # how often the engine asked the provider whether its current instance is ready

    @property
    def label(self) -> str:
        """`#12` as people see it."""
        return f"#{self.id}"

    def request(self) -> OfferRequest:
        """The offer request this booking makes."""
        return OfferRequest(self.gpu, self.count, self.spot, self.provider_wanted, self.region_wanted,
                            self.max_price, self.cuda)

    def with_(self, **changes) -> Booking:
        """A copy with some fields changed."""
        return replace(self, **changes)


@dataclass(frozen=True)
class UsageInterval:
    """One billed stretch of an instance: append-only."""

    booking_id: int
    provider: str
    gpu: str
    count: int
    start: datetime
    end: datetime | None
    price_per_gpu_hour: Decimal
    currency: str
    spot: bool = False
    id: int | None = None


def instance_tag(booking_id: int, nonce: str) -> str:
    """The name every launched instance carries: `gpubot-<booking>-<nonce>`."""
    return f"gpubot-{booking_id}-{nonce}"


def parse_instance_tag(name: str) -> tuple[int, str] | None:
    """(booking id, nonce) from an instance name, or None when it is not ours."""
    parts = (name or "").split("-")
    if len(parts) != 3 or parts[0] != "gpubot" or not parts[1].isdigit() or not parts[2]:
        return None
    return int(parts[1]), parts[2]


def button_value(booking: Booking) -> str:
    """A booking button's value: the booking and the version of it that the message shows (`12@active.1764690000`,
    state and end). A click is keyed by what its clicker saw, so a double click, a retry or a replay of it acts
    once, while a click on the message re-rendered after that (a new version) acts again."""
    ends = int(booking.ends_at.timestamp()) if booking.ends_at else 0
    return f"{booking.id}@{booking.state.value}.{ends}"


_BUTTON_VALUE = re.compile(r"([0-9]{1,18})(?:@([A-Za-z0-9_.:-]{1,100}))?")


def parse_button_value(value: object) -> tuple[int, str | None]:
    """(booking id, version seen) from a button value; a bare id (older messages, alerts) has no version.

    Anything else (not an id, or an id too long for the ledger) is a ParseError, answered to the clicker."""
    match = _BUTTON_VALUE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ParseError("That button is not one gpubot can act on; run `/gpu status` to see your bookings.")
    return int(match.group(1)), match.group(2)
