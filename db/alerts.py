"""Alerts: one open row per dedup key, so a trigger pages once and a resolve closes it."""

from __future__ import annotations

from datetime import datetime

from gpubot.db.tables import AlertRow
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

__all__ = ["alerts_between", "close_alert", "open_alert", "open_keys"]


def open_alert(kind: str, key: str, summary: str, severity: str, now: datetime, *, session: Session) -> int | None:
    """Open an alert for `key`; its id, or None when one is already open (nothing to page)."""
    row = AlertRow(kind=kind, dedup_key=key, open_key=key, summary=summary[:2000], severity=severity,
                   created_at=now)
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        return None
    return row.id


def close_alert(key: str, now: datetime, *, session: Session) -> AlertRow | None:
    """Resolve the open alert for `key`; the row, or None when nothing was open."""
    row = session.exec(select(AlertRow).where(AlertRow.open_key == key)).first()
    if row is None:
        return None
    result = session.execute(update(AlertRow).where(col(AlertRow.id) == row.id, col(AlertRow.open_key) == key)
                             .values(open_key=None, state="resolved", resolved_at=now))
    return row if result.rowcount == 1 else None


def open_keys(prefix: str, *, session: Session) -> set[str]:
    """Dedup keys of the open alerts whose key starts with `prefix`."""
    rows = session.exec(select(AlertRow.open_key).where(col(AlertRow.open_key).startswith(prefix, autoescape=True)))
    return set(rows)


def alerts_between(since: datetime, until: datetime, *, session: Session) -> list[AlertRow]:
    """Alerts raised in [since, until)."""
    return list(session.exec(select(AlertRow).where(col(AlertRow.created_at) >= since,
                                                    col(AlertRow.created_at) < until)))
