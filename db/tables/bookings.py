"""Bookings and their launches: the booking, its launch intents and acquisition attempts, its agent tokens."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from gpubot.db.tables.columns import money
from sqlalchemy import Index
from sqlmodel import Field, SQLModel

__all__ = ["AcquisitionAttemptRow", "AgentTokenRow", "BookingRow", "LaunchIntentRow"]


class BookingRow(SQLModel, table=True):
    """A booking; `id` is the `#N` people see."""

    __tablename__ = "bookings"
    __table_args__ = (Index("ix_bookings_state_next", "state", "next_attempt_at"),
                      Index("ix_bookings_owner_state", "owner", "state"),  # a person's held GPUs, every booking
                      Index("ix_bookings_state_released", "state", "released_at"))  # recent releases (forecasts)

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
    max_price: Decimal | None = Field(default=None, sa_column=money())
    start_at: datetime | None = None
    note: str | None = None
    provider: str | None = None
    region: str | None = None
    instance_id: str | None = None
    instance_name: str | None = None
    price_per_gpu_hour: Decimal | None = Field(default=None, sa_column=money())
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
    estimate: Decimal | None = Field(default=None, sa_column=money())  # held against budgets until it runs
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
    price_per_gpu_hour: Decimal | None = Field(default=None, sa_column=money())
    currency: str | None = None
    name: str = Field(unique=True)
    instance_id: str | None = None
    state: str = "intended"  # intended → launched → terminated | failed
    created_at: datetime
    updated_at: datetime


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


class AgentTokenRow(SQLModel, table=True):
    """The hash of an agent token a ready DM gave: every one stays valid until its booking ends, so a DM whose
    delivery was in doubt (and was found sent, not sent again) keeps working whatever a retry minted."""

    __tablename__ = "agent_tokens"

    token_hash: str = Field(primary_key=True)
    booking_id: int = Field(foreign_key="bookings.id", index=True)
    created_at: datetime
