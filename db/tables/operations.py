"""Operations: on-call alerts, operator switches per provider, paced vendor APIs' turns."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

__all__ = ["AlertRow", "ProviderStateRow", "RateGateRow"]


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
