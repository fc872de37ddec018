"""Notices: what the engine tells people, as data. The bot words them; the engine never holds chat text.

Each notice is a frozen dataclass with the facts a renderer needs, a stable `key` (the outbox stores a notice
once per key, so a retried use case, a second replica or a crash-and-redo never tells twice) and the `actions`
it offers as `NoticeAction`s (the bot maps each to its own button). `audience` says who reads it: a person (a
DM), the booking's own message (updated in place), a channel, or on-call. `to_record`/`from_record` turn a
notice into a JSON-able dict and back, for the outbox.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import ClassVar, NamedTuple

__all__ = [
    "NOTICE_TYPES",
    "AlertRow",
    "ApprovalDecided",
    "ApprovalNeeded",
    "AttemptsRow",
    "Audience",
    "BookingGaveUp",
    "BookingInterrupted",
    "BookingProgress",
    "BookingQueued",
    "BookingReady",
    "BookingReleased",
    "BookingRequested",
    "BookingRow",
    "BootAbandoned",
    "BudgetCrossed",
    "CheckRow",
    "CudaExclusion",
    "DigestChart",
    "DigestReady",
    "ExpiryWarning",
    "GroupRow",
    "IdleKept",
    "IdleReclaimed",
    "IdleReminder",
    "IdleSnoozed",
    "LaunchHeld",
    "Notice",
    "NoticeAction",
    "Overheat",
    "ProgressStep",
    "ProviderAlert",
    "QuoteBudgetRow",
    "ReleaseWhy",
    "ShapeChoice",
    "StepKind",
    "TelemetryStale",
    "WasteRow",
    "WatchEnded",
    "WatchFired",
    "from_record",
    "to_record",
]


class NoticeAction(StrEnum):
    """A button a notice offers; the bot maps each to its own action id."""

    EXTEND = "extend"
    RELEASE = "release"
    KEEP = "keep"
    SNOOZE = "snooze"
    APPROVE = "approve"
    DENY = "deny"
    RELEASE_REPLACED = "release_replaced"
    REPLACE = "replace"
    BOOK_WATCHED = "book_watched"


class Audience(StrEnum):
    """Who reads a notice: one person by DM, the booking's message (posted, then updated), a channel, or on-call
    (chat and pager)."""

    PERSON = "person"
    NEW_BOOKING_MESSAGE = "new_booking_message"  # posts the booking's message (its later notices update it)
    BOOKING_MESSAGE = "booking_message"
    CHANNEL = "channel"
    ONCALL = "oncall"


@dataclass(frozen=True)
class Notice:
    """Something the engine tells; subclasses carry the facts."""

    audience: ClassVar[Audience] = Audience.PERSON
    actions: ClassVar[tuple[NoticeAction, ...]] = ()

    @property
    def key(self) -> str:
        """The stable key: one delivery per key, while its outbox row is kept (all the life of its booking)."""
        raise NotImplementedError

    @property
    def follows(self) -> tuple[str, ...]:
        """The keys of notices this one never overtakes on its channel while they are still owed."""
        return ()


@dataclass(frozen=True)
class _AboutBooking(Notice):
    """A notice about one booking, told to `to` (its owner unless said)."""

    to: str
    booking_id: int
    gpu: str
    count: int

    @property
    def follows(self) -> tuple[str, ...]:
        """The booking's message is posted before anything updates it or speaks of it."""
        return () if isinstance(self, BookingRequested) else (f"requested:{self.booking_id}",)


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


class StepKind(StrEnum):
    """What a progress step says happened; its facts are the `ProgressStep` fields named here."""

    LOOKING = "looking"  # acquisition started
    LAUNCHING = "launching"  # provider, region
    OVER_BUDGET = "over_budget"  # provider, region: skipped, that offer would pass a budget
    LAUNCH_FAILED = "launch_failed"  # provider, region, outcome (the ProviderError kind)
    BOOTING = "booting"  # provider, region, elapsed
    READY = "ready"  # provider, region, elapsed (None: ready at once), checks
    BOOT_ABANDONED = "boot_abandoned"  # provider, region, outcome (not_ready, vanished), elapsed (billed), limit
    WAIT = "wait"  # gpu, elapsed (median at this hour, None: none), samples, night, night_samples, days, suggest_night
    ADVICE = "advice"  # gpu, count (landed) instead of wanted_gpu, wanted_count
    INTERRUPTED = "interrupted"  # provider, elapsed (ran), cost, currency, then; other (the resuming booking), limit
    RESUMES = "resumes"  # provider, other (the interrupted booking), limit (the time left)
    RECOVERED = "recovered"  # a launch found by reconcile after a restart; reachability is being checked
    REQUEUED = "requeued"  # interrupted while acquiring (a restart); queued to try again
    TEXT = "text"  # a line worded before progress was data (an outbox row owed before the upgrade), in `text`


@dataclass(frozen=True)
class ProgressStep:
    """One step of a booking's progress, as facts (which fields count depends on `kind`, see StepKind)."""

    kind: StepKind
    provider: str = ""
    region: str = ""
    outcome: str = ""
    elapsed: timedelta | None = None
    limit: timedelta | None = None
    checks: int = 0
    cost: Decimal | None = None
    currency: str = ""
    then: str = ""
    other: int | None = None
    gpu: str = ""
    count: int = 0
    wanted_gpu: str = ""
    wanted_count: int = 0
    samples: int = 0
    night: timedelta | None = None
    night_samples: int = 0
    days: int = 0
    suggest_night: bool = False
    text: str = ""


@dataclass(frozen=True)
class BookingProgress(_AboutBooking):
    """The booking's message shows a new step (`step` numbers them, so a newer one never loses to an older):
    the `trail` of steps so far (shown joined by arrows), `queued` when it ended in the queue, and `notes` shown on
    lines of their own below (the expected wait, advice on the shape it landed on)."""

    audience: ClassVar[Audience] = Audience.BOOKING_MESSAGE
    state: str = "requested"
    step: int = 0
    provider: str = ""
    region: str = ""
    trail: tuple[ProgressStep, ...] = ()
    queued: bool = False
    notes: tuple[ProgressStep, ...] = ()

    @property
    def key(self) -> str:
        return f"progress:{self.booking_id}:{self.step}"


@dataclass(frozen=True)
class BookingReady(_AboutBooking):
    """The machine is reachable: how to connect, and the line that starts the telemetry agent.

    `agent_command` is empty as owed: it holds a fresh agent token, which the delivery worker mints as it hands the
    notice over, so no secret is ever stored in the outbox."""

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
    actions: ClassVar[tuple[NoticeAction, ...]] = (NoticeAction.KEEP, NoticeAction.SNOOZE, NoticeAction.RELEASE)

    @property
    def key(self) -> str:
        since = self.idle_since.isoformat() if self.idle_since else ""
        return f"idle:{self.booking_id}:{since}:{self.previous.isoformat() if self.previous else 'first'}"


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
    """No GPU telemetry for `silent_for`: idle and temperature checks are paused for the booking."""

    silent_for: timedelta = timedelta(0)

    @property
    def key(self) -> str:
        return f"stale:{self.booking_id}"


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
    util: float = 0.0
    provider: str = ""
    region: str = ""
    instance: str = ""
    at: datetime | None = None
    actions: ClassVar[tuple[NoticeAction, ...]] = (NoticeAction.REPLACE,)

    @property
    def key(self) -> str:
        # The reading's time: a GPU that cools down and runs hot again is a new overheat, told again.
        return f"overheat:{self.booking_id}:{self.gpu_index}:{self.at.isoformat() if self.at else ''}"


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
class WatchFired(Notice):
    """A watch saw its shape become available; Book now takes that offer for `duration`. The watch has ended."""

    actions: ClassVar[tuple[NoticeAction, ...]] = (NoticeAction.BOOK_WATCHED,)
    to: str
    watch_id: int
    gpu: str
    count: int
    provider: str = ""
    region: str = ""
    price: Decimal = Decimal(0)
    currency: str = "USD"
    duration: timedelta = timedelta(0)

    @property
    def key(self) -> str:
        return f"watch:{self.watch_id}"


@dataclass(frozen=True)
class WatchEnded(Notice):
    """A watch ran its time (`watched_for`) and no capacity of its shape appeared."""

    to: str
    watch_id: int
    gpu: str
    count: int
    watched_for: timedelta = timedelta(0)

    @property
    def key(self) -> str:
        return f"watch-ended:{self.watch_id}"


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
    ago, or scheduled to start at `until`), or failed (`failure`)."""

    booking_id: int
    count: int
    gpu: str
    owner: str
    provider: str = ""
    state: str = ""
    until: datetime | None = None
    waited: timedelta = timedelta(0)
    failure: str = ""


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


@dataclass(frozen=True)
class ProviderAlert(Notice):
    """On-call hears of a fault (`kind`, e.g. provider_quota), triggered or resolved, under the alert's key;
    `alert_id` is the ledger's alert (a key raised again after a resolve is a new one), `replace` the booking
    that a Replace button would replace (an overheat), `owner` whose booking it is about. `target` is the one
    chat reader (the alerts channel or an on-call person) of this copy: each reader is owed its own, so each is
    delivered and retried alone; the pager's copy has none."""

    audience: ClassVar[Audience] = Audience.ONCALL
    kind: str
    alert_key: str
    summary: str
    severity: str = "error"
    resolve: bool = False
    alert_id: int = 0
    replace: int | None = None
    owner: str = ""  # the person the alert concerns (a Slack user id), named by the renderer
    target: str = ""

    @property
    def actions(self) -> tuple[NoticeAction, ...]:  # type: ignore[override]
        """Replace, on a trigger about a booking that can be replaced."""
        return (NoticeAction.REPLACE,) if self.replace is not None and not self.resolve else ()

    @property
    def key(self) -> str:
        return f"alert:{self.alert_key}:{self.alert_id}:{'resolve' if self.resolve else 'trigger'}{self._to()}"

    @property
    def follows(self) -> tuple[str, ...]:
        """A resolve never reaches a reader before its trigger to that reader (or before the one trigger for all
        readers that was owed before each reader had its own row)."""
        if not self.resolve:
            return ()
        return tuple(dict.fromkeys((self.trigger_key, replace(self, target="").trigger_key)))

    @property
    def trigger_key(self) -> str:
        """The key of the trigger this notice (a resolve) follows, on the same reader."""
        return f"alert:{self.alert_key}:{self.alert_id}:trigger{self._to()}"

    def _to(self) -> str:
        return f":{self.target}" if self.target else ""


NOTICE_TYPES: dict[str, type[Notice]] = {cls.__name__: cls for cls in (
    BookingRequested, BookingProgress, BookingReady, BootAbandoned, BookingQueued, BookingGaveUp, BookingInterrupted,
    BookingReleased, IdleReminder, IdleReclaimed, TelemetryStale, ExpiryWarning, Overheat, ApprovalNeeded,
    ApprovalDecided, LaunchHeld, WatchFired, WatchEnded, BudgetCrossed, DigestReady, ProviderAlert, IdleKept,
    IdleSnoozed, DigestChart)}


def to_record(notice: Notice) -> dict:
    """A JSON-able dict of the notice: its type and its fields, each value tagged where JSON has no type for it."""
    return {"type": type(notice).__name__, "fields": {f.name: _encode(getattr(notice, f.name))
                                                      for f in fields(notice)}}


def from_record(record: dict) -> Notice:
    """The notice `to_record` made; ValueError for an unknown type."""
    cls = NOTICE_TYPES.get(record.get("type", ""))
    if cls is None:
        raise ValueError(f"unknown notice type {record.get('type')!r}")
    values = {name: _decode(value) for name, value in record["fields"].items()}
    if cls in (BookingProgress, BookingGaveUp):  # a row owed before progress was data holds English text
        values["trail"] = tuple(ProgressStep(StepKind.TEXT, text=step) if isinstance(step, str) else step
                                for step in values.get("trail", ()))
    return cls(**values)


def _encode_step(step: ProgressStep) -> dict:
    """The step's fields that differ from their defaults (a trail is owed often; its rows stay small)."""
    return {"$step": {f.name: _encode(getattr(step, f.name)) for f in fields(step)
                      if getattr(step, f.name) != f.default}}


def _decode_step(values: dict) -> ProgressStep:
    decoded = {name: _decode(value) for name, value in values.items()}
    return ProgressStep(**(decoded | {"kind": StepKind(decoded["kind"])}))


def _encode(value: object) -> object:
    if isinstance(value, ProgressStep):
        return _encode_step(value)
    if isinstance(value, Decimal):
        return {"$dec": str(value)}
    if isinstance(value, datetime):
        return {"$dt": value.isoformat()}
    if isinstance(value, timedelta):
        return {"$td": value.total_seconds()}
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v) for v in value]}
    return value


def _decode(value: object) -> object:
    if not isinstance(value, dict):
        return value
    (tag, inner), = value.items()
    decoders = {"$dec": Decimal, "$dt": datetime.fromisoformat, "$td": lambda s: timedelta(seconds=s),
                "$tuple": lambda items: tuple(_decode(v) for v in items), "$step": _decode_step}
    return decoders[tag](inner)
