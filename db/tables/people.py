"""People: what gpubot remembers per person, and their `/gpu watch` requests."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from gpubot.db.tables.columns import money
from sqlalchemy import Index
from sqlmodel import Field, SQLModel

__all__ = ["PersonRow", "WatchRow"]


class PersonRow(SQLModel, table=True):
    """What gpubot remembers about a person beyond their bookings: the language they chose with `/gpu lang`."""

    __tablename__ = "people"

    user_id: str = Field(primary_key=True)
    language: str | None = None  # `en` | `zh`; None: follow their Slack locale, then team.language
    updated_at: datetime


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
    offer_price: Decimal | None = Field(default=None, sa_column=money())
    offer_currency: str | None = None
    request_key: str | None = Field(default=None, unique=True)  # the Slack request that made it (trigger_id)
