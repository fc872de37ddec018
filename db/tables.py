"""SQLModel tables of the ledger. Only db/ imports these; the rest of the house sees domain objects."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import Column, Index, Numeric, UniqueConstraint, text
from sqlalchemy import false as sa_false
from sqlmodel import Field, SQLModel

__all__ = [
    "AcquisitionAttemptRow",
    "AlertRow",
    "BookingRow",
    "BudgetNotificationRow",
    "BudgetOverrideRow",
    "CostCheckRow",
    "EffectRow",
    "InboxRow",
    "LaunchIntentRow",
    "OutboxRow",
    "PersonRow",
    "PoolClaimRow",
    "ProviderStateRow",
    "RateGateRow",
    "SimulatedMachineRow",
    "TelemetryRollupRow",
    "TelemetrySampleRow",
    "UsageIntervalRow",
    "WatchRow",
]


def _money(nullable: bool = True) -> Column:
    return Column(Numeric(18, 6), nullable=nullable)


class BookingRow(SQLModel, table=True):
    """A booking; `id` is the `#N` people see."""

    __tablename__ = "bookings"
    __table_args__ = (Index("ix_bookings_state_next", "state", "next_attempt_at"),
                      Index("ix_bookings_owner_state", "owner", "state"))  # a person's held GPUs, every booking

    id: int | None = Field(default=None, primary_key=True)
    owner: str
    project: str | None = Field(default=None, index=True)
    gpu: str
    count: int
    duration_s: int
    state: str = Field(index=True)
    spot: bool = False
    provider_wanted: str | None = None
    region_wanted: str | None = None
    max_price: Decimal | None = Field(default=None, sa_column=_money())
    start_at: datetime | None = None
    note: str | None = None
    provider: str | None = None
    region: str | None = None
    instance_id: str | None = None
    instance_name: str | None = None
    price_per_gpu_hour: Decimal | None = Field(default=None, sa_column=_money())
    currency: str | None = None
    requested_at: datetime
    started_at: datetime | None = None
    ends_at: datetime | None = None
    released_at: datetime | None = None
    channel: str | None = None
    message_ts: str | None = None
    failure: str | None = None
    connect: str | None = None
    next_attempt_at: datetime | None = None
    attempt_rounds: int = 0
    request_key: str | None = Field(default=None, unique=True)
    agent_token_hash: str | None = Field(default=None, index=True)
    idle_since: datetime | None = None
    idle_reminded_at: datetime | None = None
    idle_kept_since: datetime | None = None
    idle_rule: str | None = None  # which rule reminded last: "idle" (utilisation) or "no_process"
    snoozed_until: datetime | None = None
    alternatives: str | None = None  # other shapes that would do: `h100x2,rtx4090x8` (db.shapes: the codec)
    cuda: str | None = None
    image: str | None = None
    replaces: int | None = Field(default=None, index=True)
    avoid: str | None = None  # `provider/region`
    estimate: Decimal | None = Field(default=None, sa_column=_money())  # held against budgets until it runs
    approved_by: str | None = None  # the admin who let it go over budget
    ready_at: datetime | None = None  # its instance became reachable (started_at: launched)
    boot_polls: int = 0  # describe calls on its current instance while it booted
    # the ready DM is owed; whoever finds it due sends it (None: sent, as for almost every row: hence its own index)
    ready_dm_due_at: datetime | None = Field(default=None, index=True)
    dm_token_hash: str | None = Field(default=None, index=True)  # the agent token given in the ready DM
    quoted: str | None = None  # the quote it was booked on, as facts (a BookingRequested record, JSON); never text


class LaunchIntentRow(SQLModel, table=True):
    """Written before a launch call, completed after it: what reconciliation trusts after a crash."""

    __tablename__ = "launch_intents"

    id: int | None = Field(default=None, primary_key=True)
    booking_id: int = Field(foreign_key="bookings.id", index=True)
    provider: str
    region: str
    offer_ref: str
    gpu: str = ""
    count: int = 0
    price_per_gpu_hour: Decimal | None = Field(default=None, sa_column=_money())
    currency: str | None = None
    name: str = Field(unique=True)
    instance_id: str | None = None
    state: str = "intended"  # intended → launched → terminated | failed
    created_at: datetime
    updated_at: datetime


class UsageIntervalRow(SQLModel, table=True):
    """One billed stretch of an instance. Append-only: rows are written closed and never edited."""

    __tablename__ = "usage_intervals"
    __table_args__ = (
        UniqueConstraint("instance_name", "start", name="uq_usage_instance_start"),
        Index("ix_usage_start", "start"),
        Index("ix_usage_end", "end"),  # reports read recent windows: `end > since` skips the older ledger
        Index("ix_usage_seconds", "seconds"),  # the longest stretch bounds window scans (db/ledger_window.py)
        # the few stretches of unknown offset, priced one by one (db/ledger_window.edge_rows)
        Index("ix_usage_offset_unknown", "start", postgresql_where=text("offset_s IS NULL"),
              sqlite_where=text("offset_s IS NULL")),
    )

    id: int | None = Field(default=None, primary_key=True)
    booking_id: int = Field(foreign_key="bookings.id", index=True)
    instance_name: str
    owner: str
    project: str | None = None
    provider: str
    gpu: str
    count: int
    start: datetime
    end: datetime
    seconds: int  # whole seconds of [start, end), billed per second; stored so SQL sums are exact
    # whole seconds from the booking's start to `start` (continuous use, for tiers); None: unknown, priced alone
    offset_s: int | None = None
    price_per_gpu_hour: Decimal = Field(sa_column=_money(False))
    currency: str
    spot: bool = False
    note: str | None = None


class AcquisitionAttemptRow(SQLModel, table=True):
    """One try to launch a booking on one offer."""

    __tablename__ = "acquisition_attempts"

    id: int | None = Field(default=None, primary_key=True)
    booking_id: int = Field(foreign_key="bookings.id", index=True)
    provider: str
    region: str | None = None
    gpu: str | None = None
    # launched | no_capacity | quota | auth | rate_limited | invalid | transient | not_ready | vanished
    outcome: str
    error_kind: str | None = None
    detail: str | None = None
    latency_ms: int = 0
    at: datetime = Field(index=True)


class AlertRow(SQLModel, table=True):
    """An on-call alert; one open row per dedup key."""

    __tablename__ = "alerts"

    id: int | None = Field(default=None, primary_key=True)
    kind: str
    dedup_key: str = Field(index=True)
    open_key: str | None = Field(default=None, unique=True)  # = dedup_key while triggered: one open alert per key
    state: str = "triggered"  # triggered | resolved
    summary: str
    severity: str = "error"
    created_at: datetime
    resolved_at: datetime | None = None
    # Crossings the hourly page cap folded into this alert instead of paging (domain.alerting): how many, and
    # the newest ones as JSON [{"gpu": 3, "since": "…", "value": 95.0}, …].
    folded: int = 0
    details: str | None = None
    # From before alerts went through the outbox (which now records each delivery): no longer written, and
    # only `paged` still read, to resolve at PagerDuty an alert paged before the upgrade.
    delivered: bool = False  # the alerts channel and on-call DMs got the trigger
    attempts: int = 0
    actions: str | None = None  # JSON [[label, action id, value], …]: the buttons
    paged: str | None = None  # the last event PagerDuty accepted for it: trigger | resolve
    pager_error: str | None = None  # PagerDuty refused it for good (HTTP 400): never sent again
    pager_attempts: int = 0  # PagerDuty events that failed (429/5xx/unreachable) and are to be sent again
    pager_due_at: datetime | None = Field(default=None, index=True)  # when to send the missing event again


class BudgetNotificationRow(SQLModel, table=True):
    """A threshold crossing already announced, so it is announced once per period and scope."""

    __tablename__ = "budget_notifications"
    __table_args__ = (UniqueConstraint("scope", "period", "threshold", name="uq_budget_once"),)

    id: int | None = Field(default=None, primary_key=True)
    scope: str
    period: str
    threshold: int
    fired_at: datetime


class TelemetrySampleRow(SQLModel, table=True):
    """One GPU reading of a booking."""

    __tablename__ = "telemetry_samples"
    # One sample per booking, GPU and sample time (pushes are timed to the agent interval): a replayed or
    # flooded push stores nothing more.
    __table_args__ = (Index("ix_telemetry_booking_at", "booking_id", "at"), Index("ix_telemetry_at", "at"),
                      Index("uq_telemetry_sample", "booking_id", "gpu_index", "at", unique=True))

    id: int | None = Field(default=None, primary_key=True)
    booking_id: int = Field(foreign_key="bookings.id")
    gpu_index: int
    util: float | None = None  # unknown: a MIG-enabled GPU reports none
    temp_c: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    processes: int | None = None  # compute processes holding the GPU; unknown: an older agent, a failed query
    process_mem_mib: float | None = None
    at: datetime


class TelemetryRollupRow(SQLModel, table=True):
    """Samples older than the idle and health checks read, rolled up per booking, GPU and interval
    ([retention] telemetry_rollup, from the epoch); sums and counts, so a late sample merges exactly."""

    __tablename__ = "telemetry_rollups"
    __table_args__ = (Index("uq_telemetry_rollup", "booking_id", "gpu_index", "bucket", unique=True),
                      Index("ix_telemetry_rollup_bucket", "bucket"))

    id: int | None = Field(default=None, primary_key=True)
    booking_id: int = Field(foreign_key="bookings.id")
    gpu_index: int
    bucket: datetime  # the interval's start
    first_at: datetime  # its first and last sample
    last_at: datetime
    samples: int
    util_n: int = 0  # samples with a known utilisation (a MIG-enabled GPU reports none)
    util_sum: float = 0.0
    util_min: float | None = None
    util_max: float | None = None
    temp_max: float | None = None
    mem_n: int = 0
    mem_sum: float = 0.0  # of mem_used_mib
    processes_min: int | None = None  # unknown when no sample said
    processes_max: int | None = None


class AgentTokenRow(SQLModel, table=True):
    """The hash of an agent token a ready DM gave: every one stays valid until its booking ends, so a DM whose
    delivery was in doubt (and was found sent, not sent again) keeps working whatever a retry minted."""

    __tablename__ = "agent_tokens"

    token_hash: str = Field(primary_key=True)
    booking_id: int = Field(foreign_key="bookings.id", index=True)
    created_at: datetime


class EffectRow(SQLModel, table=True):
    """An outside effect already carried out (a DM, a post, a click), keyed so it happens once."""

    __tablename__ = "effects"

    key: str = Field(primary_key=True)
    created_at: datetime


class ProviderStateRow(SQLModel, table=True):
    """Operator switches per provider (paused by an admin)."""

    __tablename__ = "provider_state"

    name: str = Field(primary_key=True)
    paused: bool = False
    updated_by: str | None = None
    updated_at: datetime | None = None


class RateGateRow(SQLModel, table=True):
    """The next free turn of a paced vendor API (Lambda: ~1 request/s), shared by every replica."""

    __tablename__ = "rate_gates"

    key: str = Field(primary_key=True)  # e.g. lambda:lambda:launch
    next_at: float  # wall-clock epoch seconds at which the next turn may go


class BudgetOverrideRow(SQLModel, table=True):
    """A budget set by an admin from Slack; it wins over the policy file."""

    __tablename__ = "budget_overrides"

    scope: str = Field(primary_key=True)  # team | user:U123 | project:llm
    amount: Decimal = Field(sa_column=_money(False))
    set_by: str
    set_at: datetime


class CostCheckRow(SQLModel, table=True):
    """The latest disagreement (over 2 %) between a provider's reported cost and ours, one row per booking."""

    __tablename__ = "cost_checks"

    booking_id: int = Field(foreign_key="bookings.id", primary_key=True)
    provider: str
    basis: str  # total (cost so far) | rate (cost per hour of the instance)
    ours: Decimal = Field(sa_column=_money(False))
    theirs: Decimal = Field(sa_column=_money(False))
    currency: str
    diff_percent: Decimal = Field(sa_column=_money(False))
    checked_at: datetime = Field(index=True)


class WatchRow(SQLModel, table=True):
    """`/gpu watch`: tell `owner` once when the shape can start for `duration_s`; then it holds the offer found."""

    __tablename__ = "watches"
    __table_args__ = (Index("ix_watches_state_expires", "state", "expires_at"),)

    id: int | None = Field(default=None, primary_key=True)
    owner: str = Field(index=True)
    gpu: str
    count: int
    provider: str | None = None
    duration_s: int | None = None  # the booking length watched for (Book now books it); None: stored before 0016
    state: str = "active"  # active → fired | cancelled | expired
    created_at: datetime
    expires_at: datetime
    fired_at: datetime | None = None
    offer_provider: str | None = None
    offer_region: str | None = None
    offer_ref: str | None = None
    offer_price: Decimal | None = Field(default=None, sa_column=_money())
    offer_currency: str | None = None
    request_key: str | None = Field(default=None, unique=True)  # the Slack request that made it (trigger_id)


class PoolClaimRow(SQLModel, table=True):
    """One GPU slot of a team-pool machine held by an instance; the unique key makes a slot go to one only."""

    __tablename__ = "pool_claims"
    __table_args__ = (UniqueConstraint("provider", "host", "slot", name="uq_pool_claim_slot"),)

    id: int | None = Field(default=None, primary_key=True)
    provider: str
    host: str
    slot: int
    instance_name: str = Field(index=True)
    claimed_at: datetime


class SimulatedMachineRow(SQLModel, table=True):
    """A machine a simulated cloud runs, kept so that the demo's cloud outlives a restart like a real one."""

    __tablename__ = "simulated_machines"

    provider: str = Field(primary_key=True)
    instance_id: str = Field(primary_key=True)
    name: str
    region: str
    gpu: str
    count: int
    ssh: str | None = None
    launched_at: float  # epoch seconds on the simulated cloud's clock


class PersonRow(SQLModel, table=True):
    """What gpubot remembers about a person beyond their bookings: the language they chose with `/gpu lang`."""

    __tablename__ = "people"

    user_id: str = Field(primary_key=True)
    language: str | None = None  # `en` | `zh`; None: follow their Slack locale, then team.language
    updated_at: datetime


class OutboxRow(SQLModel, table=True):
    """A notice owed to a delivery channel (slack, pagerduty), written with the state change that caused it; one
    row per (channel, notice key), so a notice is owed once however often its cause is retried."""

    __tablename__ = "outbox"
    __table_args__ = (UniqueConstraint("channel", "notice_key", name="uq_outbox_channel_key"),
                      Index("ix_outbox_pending", "delivered_at", "due_at"))

    id: int | None = Field(default=None, primary_key=True)
    channel: str  # slack | pagerduty
    notice_key: str
    kind: str  # the notice's type name
    booking_id: int | None = Field(default=None, index=True)
    payload: str  # JSON of domain.notices.to_record
    created_at: datetime
    due_at: datetime  # not before: the first try, or the next after a failure (Retry-After honoured)
    claimed_until: datetime | None = None  # a worker holds it until then (a crashed worker's claim runs out)
    # Handed to its channel, outcome not yet known: claimed again while set, it may have been sent already.
    sending: bool = Field(default=False, sa_column_kwargs={"server_default": sa_false()})
    attempts: int = 0
    delivered_at: datetime | None = None  # the channel accepted it (or a newer notice superseded it)
    failed_at: datetime | None = None  # given up: refused for good, or out of attempts
    last_error: str | None = None


class InboxRow(SQLModel, table=True):
    """A signed Slack command or interaction, recorded before its ack and marked done when its work has finished."""

    __tablename__ = "inbox"

    key: str = Field(primary_key=True)  # sha256 of the signed body: Slack's retry of the same body is the same row
    kind: str  # `command` | `interaction`
    response_url: str | None = None
    received_at: datetime
    done_at: datetime | None = Field(default=None, index=True)
    outcome: str | None = None  # `finished` | `interrupted` (answered on start after a crash)
