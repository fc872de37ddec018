"""Notices of a booking's life from its request to its release: its message, ready DM, interruptions, the end."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import ClassVar, NamedTuple

from gpubot.domain.notices.base import Audience, NoticeAction, _AboutBooking
from gpubot.domain.notices.booking_progress import ProgressStep

__all__ = [
    "BookingCancelled", "BookingExtended",
    "BookingGaveUp", "BookingInterrupted", "BookingQueued", "BookingReady", "BookingReleased", "BookingRequested",
    "BootAbandoned", "CudaExclusion", "QuoteBudgetRow", "ReleaseWhy", "ShapeChoice", "SpotFellBack",
]


class QuoteBudgetRow(NamedTuple):
    """A budget scope as a new booking found it: its limit, and what was spent and committed before it."""

    scope: str
    limit: Decimal
    projected: Decimal


class ShapeChoice(NamedTuple):
    """One shape a booking would take (its first choice or an alternative) and its best offer now, if any."""

    gpu: str
    count: int
    total: Decimal | None = None
    provider: str = ""
    region: str = ""
    available: bool = False


class CudaExclusion(NamedTuple):
    """An offer left out of a quote because its CUDA is older than the booking asks (`why`: the versions)."""

    cuda: str
    provider: str
    region: str
    why: str


@dataclass(frozen=True)
class BookingRequested(_AboutBooking):
    """A booking was recorded: its message is posted with the quote (price, budget effect, alternatives, offers
    left out for CUDA, an over-budget warning when `decision` is "warn"); every later notice of the booking
    follows it, so they update a message that exists. (Rows come back from the outbox as plain tuples.)"""

    audience: ClassVar[Audience] = Audience.NEW_BOOKING_MESSAGE
    state: str = "requested"
    duration: timedelta = timedelta(0)
    hourly: Decimal = Decimal(0)
    total: Decimal = Decimal(0)
    currency: str = "USD"
    provider: str = ""
    region: str = ""
    project: str | None = None
    note: str | None = None
    estimate: Decimal = Decimal(0)
    decision: str = "ok"
    start_at: datetime | None = None
    budget: tuple[QuoteBudgetRow, ...] = ()
    choices: tuple[ShapeChoice, ...] = ()  # the first choice then each alternative, when alternatives were asked
    left_out: tuple[CudaExclusion, ...] = ()

    @property
    def key(self) -> str:
        return f"requested:{self.booking_id}"

    @property
    def follows(self) -> tuple[str, ...]:
        """The first of its booking's notices: it follows none."""
        return ()


@dataclass(frozen=True)
class BookingReady(_AboutBooking):
    """The machine is reachable: how to connect, and (`telemetry_wait`, when this gpubot serves its agent) that GPU
    telemetry is on its way, with how long before the owner is sent the line that starts the agent by hand (in
    TelemetryStale, only if nothing arrived).

    `agent_command` is no longer filled (rows owed before the line moved to TelemetryStale still load)."""

    provider: str = ""
    region: str = ""
    connect: str | None = None
    ready_at: datetime | None = None
    replaces: int | None = None
    started_at: datetime | None = None
    spot: bool = False
    advice: str = ""  # English, in rows owed before `notes` carried it
    notes: tuple[ProgressStep, ...] = ()  # advice on the shape it landed on, as facts
    replace_grace: timedelta | None = None
    agent_command: str = ""
    telemetry_wait: timedelta | None = None
    actions: ClassVar[tuple[NoticeAction, ...]] = (NoticeAction.RELEASE,)

    @property
    def key(self) -> str:
        return f"ready:{self.booking_id}:{self.ready_at.isoformat() if self.ready_at else ''}"


@dataclass(frozen=True)
class BootAbandoned(_AboutBooking):
    """A launched machine never became reachable (`not_ready`, after `limit`) or its provider dropped it while it
    booted (`vanished`): it was terminated, its `ran` of booting billed, and the next offer is being tried."""

    provider: str = ""
    region: str = ""
    instance: str = ""
    outcome: str = "not_ready"
    ran: timedelta = timedelta(0)
    limit: timedelta = timedelta(0)

    @property
    def key(self) -> str:
        return f"boot-abandoned:{self.booking_id}:{self.instance}"


@dataclass(frozen=True)
class BookingInterrupted(_AboutBooking):
    """The provider took the machine back (`spot` or not) after `ran`; it cost `cost` so far. `then` says what
    follows: `requeue` (booking `resumed` resumes it for `remaining`), `nothing_left` or `notify`."""

    provider: str = ""
    spot: bool = False
    ran: timedelta = timedelta(0)
    cost: Decimal = Decimal(0)
    currency: str = "USD"
    then: str = "notify"
    resumed: int | None = None
    remaining: timedelta = timedelta(0)

    @property
    def key(self) -> str:
        return f"preempted:{self.booking_id}"


@dataclass(frozen=True)
class SpotFellBack(_AboutBooking):
    """A spot booking found no spot capacity for `waited` (`[spot] fallback_after` is `after`), so it launched on
    demand on `provider` `region`, billed `price` per GPU-hour (what its ledger row now says)."""

    waited: timedelta = timedelta(0)
    after: timedelta = timedelta(0)
    provider: str = ""
    region: str = ""
    price: Decimal = Decimal(0)
    currency: str = "USD"

    @property
    def key(self) -> str:
        return f"spot-fell-back:{self.booking_id}"


@dataclass(frozen=True)
class BookingQueued(_AboutBooking):
    """No offer could be placed now; the booking waits and is retried."""

    trail: tuple[str, ...] = ()
    since: datetime | None = None

    @property
    def key(self) -> str:
        return f"queued:{self.booking_id}:{self.since.isoformat() if self.since else ''}"


@dataclass(frozen=True)
class BookingGaveUp(_AboutBooking):
    """Acquisition gave up on the booking, after the `trail` of its last round."""

    trail: tuple[ProgressStep, ...] = ()

    @property
    def key(self) -> str:
        return f"failed:{self.booking_id}"


@dataclass(frozen=True)
class BookingExtended(_AboutBooking):
    """The booking's end was pushed out by `by` to `ends_at`, `length` in all (by `by_whom`, a Slack user id, when
    not its owner): its message is drawn again, with the new length and what it costs."""

    audience: ClassVar[Audience] = Audience.BOOKING_MESSAGE
    by: timedelta = timedelta(0)
    ends_at: datetime | None = None
    length: timedelta = timedelta(0)
    by_whom: str | None = None

    @property
    def key(self) -> str:
        return f"extended:{self.booking_id}:{self.ends_at.isoformat() if self.ends_at else ''}"


@dataclass(frozen=True)
class BookingCancelled(_AboutBooking):
    """The booking was cancelled before it had an instance (by `by`, a Slack user id, when not its owner): nothing
    was billed. Its message is drawn again, in its final state."""

    audience: ClassVar[Audience] = Audience.BOOKING_MESSAGE
    by: str | None = None

    @property
    def key(self) -> str:
        return f"cancelled:{self.booking_id}"


class ReleaseWhy(StrEnum):
    """Why a booking ended (`BookingReleased.why`); the facts it names are BookingReleased fields."""

    RELEASED = "released"  # by its owner, or by `by`
    CANCELLED_BOOTING = "cancelled_booting"  # cancelled while it booted, by its owner or by `by`
    EXPIRED = "expired"  # its time was up
    EXPIRED_BOOTING = "expired_booting"  # its time was up before the machine became reachable
    IDLE = "idle"  # its GPUs were idle for `idle_for`
    REPLACED = "replaced"  # booking `replaced_by` replaced it
    RESTARTED = "restarted"  # a release completed after a restart
    LOST = "lost"  # the provider no longer runs it
    STOPPED = "stopped"  # the provider had already stopped it
    RETRIED = "retried"  # a release that had failed, tried again


@dataclass(frozen=True)
class BookingReleased(_AboutBooking):
    """The booking ended: `why` (and `by` whom, a Slack user id, when not its owner), how long it ran, its cost.
    (`reason` is the English of rows owed before `why` was kept.)"""

    reason: str = ""
    why: str = ""
    idle_for: timedelta | None = None
    replaced_by: int | None = None
    by: str | None = None
    ran: timedelta = timedelta(0)
    cost: Decimal = Decimal(0)
    currency: str = "USD"

    @property
    def key(self) -> str:
        return f"released:{self.booking_id}"
