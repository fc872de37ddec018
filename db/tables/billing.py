"""Money: the usage ledger's stretches, budget overrides and announced crossings, provider-cost checks."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from gpubot.db.tables.columns import money
from sqlalchemy import Index, UniqueConstraint, text
from sqlmodel import Field, SQLModel

__all__ = ["BudgetNotificationRow", "BudgetOverrideRow", "CostCheckRow", "UsageIntervalRow"]


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
    price_per_gpu_hour: Decimal = Field(sa_column=money(False))
    currency: str
    spot: bool = False
    note: str | None = None


class BudgetNotificationRow(SQLModel, table=True):
    """A threshold crossing already announced, so it is announced once per period and scope."""

    __tablename__ = "budget_notifications"
    __table_args__ = (UniqueConstraint("scope", "period", "threshold", name="uq_budget_once"),)

    id: int | None = Field(default=None, primary_key=True)
    scope: str
    period: str
    threshold: int
    fired_at: datetime


class BudgetOverrideRow(SQLModel, table=True):
    """A budget set by an admin from Slack; it wins over the policy file."""

    __tablename__ = "budget_overrides"

    scope: str = Field(primary_key=True)  # team | user:U123 | project:llm
    amount: Decimal = Field(sa_column=money(False))
    set_by: str
    set_at: datetime


class CostCheckRow(SQLModel, table=True):
    """The latest disagreement (over 2 %) between a provider's reported cost and ours, one row per booking."""

    __tablename__ = "cost_checks"

    booking_id: int = Field(foreign_key="bookings.id", primary_key=True)
    provider: str
    basis: str  # total (cost so far) | rate (cost per hour of the instance)
    ours: Decimal = Field(sa_column=money(False))
    theirs: Decimal = Field(sa_column=money(False))
    currency: str
    diff_percent: Decimal = Field(sa_column=money(False))
    checked_at: datetime = Field(index=True)
