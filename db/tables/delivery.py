"""Delivery: notices owed to a channel (outbox), commands received (inbox), effects carried out once."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint
from sqlalchemy import false as sa_false
from sqlmodel import Field, SQLModel

__all__ = ["EffectRow", "InboxRow", "OutboxRow"]


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


class EffectRow(SQLModel, table=True):
    """An outside effect already carried out (a DM, a post, a click), keyed so it happens once."""

    __tablename__ = "effects"

    key: str = Field(primary_key=True)
    created_at: datetime
