"""Alerts: one open row per dedup key, so a trigger pages once and a resolve closes it."""

from __future__ import annotations

import json
from datetime import datetime

from gpubot.db.tables.operations import AlertRow
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

__all__ = ["alerts_between", "close_alert", "fold_into", "open_alert", "open_keys", "open_since", "opened_since"]

MAX_DETAILS = 20  # folded crossings kept in an alert's details (the count keeps growing)


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


def open_since(prefix: str, *, session: Session) -> dict[str, datetime]:
    """When each open alert whose key starts with `prefix` opened, by key."""
    rows = session.exec(select(AlertRow.open_key, AlertRow.created_at)
                        .where(col(AlertRow.open_key).startswith(prefix, autoescape=True)))
    return {key: at for key, at in rows}


def opened_since(prefix: str, since: datetime, *, session: Session) -> list[str]:
    """Dedup keys of the alerts (open or not) whose key starts with `prefix`, opened at `since` or later."""
    return list(session.exec(select(AlertRow.dedup_key).where(
        col(AlertRow.dedup_key).startswith(prefix, autoescape=True), col(AlertRow.created_at) >= since)))


def fold_into(prefix: str, gpu: int, since: datetime, seen: datetime, value: float | None, *,
              session: Session) -> AlertRow | None:
    """Fold a crossing (GPU `gpu` past the limit from `since`, last seen at `seen`) into the newest alert whose key
    starts with `prefix`, its open one first; the row when this is a new crossing, None when there is no alert or
    the crossing is one already folded that is still going on (its last sighting is not before `since`)."""
    rows = list(session.exec(select(AlertRow).where(col(AlertRow.dedup_key).startswith(prefix, autoescape=True))
                             .order_by(col(AlertRow.open_key).is_(None), col(AlertRow.created_at).desc(),
                                       col(AlertRow.id).desc())))
    if not rows:
        return None
    for row in rows:  # the crossing may have been folded into another of the booking's alerts
        details = json.loads(row.details) if row.details else []
        mine = [entry for entry in details if entry.get("gpu") == gpu]
        if mine and datetime.fromisoformat(mine[-1]["seen"]) >= since:  # still going on: only seen again
            mine[-1].update(seen=seen.isoformat(), value=value)
            row.details = json.dumps(details)
            session.add(row)
            return None
    row = rows[0]
    details = json.loads(row.details) if row.details else []
    details.append({"gpu": gpu, "since": since.isoformat(), "seen": seen.isoformat(), "value": value})
    row.details = json.dumps(details[-MAX_DETAILS:])
    row.folded += 1
    session.add(row)
    session.flush()
    return row
