"""Alerts: one open row per dedup key, so a trigger pages once and a resolve closes it."""

from __future__ import annotations

import json
from datetime import datetime

from gpubot.db.tables import AlertRow
from gpubot.domain.ports import Action
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

__all__ = ["actions_of", "alerts_between", "close_alert", "mark_delivery", "mark_page", "missing_page", "open_alert",
           "open_keys", "pages_due", "settle_page", "undelivered"]


def open_alert(kind: str, key: str, summary: str, severity: str, now: datetime, *, session: Session,
               actions: list[Action] | None = None) -> int | None:
    """Open an alert for `key` (with its buttons); its id, or None when one is already open (nothing to page)."""
    row = AlertRow(kind=kind, dedup_key=key, open_key=key, summary=summary[:2000], severity=severity,
                   created_at=now, actions=json.dumps(actions) if actions else None)
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        return None
    return row.id


def actions_of(row: AlertRow) -> list[Action]:
    """The buttons an alert was raised with."""
    return [(label, action_id, value) for label, action_id, value in json.loads(row.actions or "[]")]


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


def mark_delivery(alert_id: int, delivered: bool, *, session: Session) -> None:
    """Record one delivery attempt of an alert."""
    row = session.get(AlertRow, alert_id)
    if row:
        row.delivered = row.delivered or delivered
        row.attempts += 1
        session.add(row)


def mark_page(alert_id: int, event: str, outcome: str, due_at: datetime | None, *, session: Session) -> None:
    """Record what PagerDuty did with one event of an alert: accepted it, refused it for good (`rejected`), or
    failed (`due_at`: when to send the missing event again)."""
    row = session.get(AlertRow, alert_id)
    if row is None:
        return
    if outcome == "accepted":
        row.paged, row.pager_due_at = event, None
    elif outcome == "rejected":
        row.pager_error, row.pager_due_at = f"{event} refused by PagerDuty (HTTP 400)", None
    else:
        row.pager_attempts, row.pager_due_at = row.pager_attempts + 1, due_at
    session.add(row)


def missing_page(row: AlertRow) -> str | None:
    """The PagerDuty event an alert still lacks: its trigger while open; once resolved, its resolve — only when
    PagerDuty has the incident (an alert resolved before its trigger got through needs nothing there)."""
    if row.state == "triggered":
        return None if row.paged == "trigger" else "trigger"
    return "resolve" if row.paged == "trigger" else None


def settle_page(alert_id: int, *, session: Session) -> None:
    """Nothing is due at PagerDuty for this alert any more."""
    row = session.get(AlertRow, alert_id)
    if row is not None:
        row.pager_due_at = None
        session.add(row)


def pages_due(now: datetime, *, session: Session) -> list[AlertRow]:
    """Alerts with a PagerDuty event to send again now (a failed trigger or resolve whose backoff is over)."""
    query = select(AlertRow).where(col(AlertRow.pager_due_at) <= now, col(AlertRow.pager_error).is_(None))
    return list(session.exec(query.order_by(col(AlertRow.id))))


def undelivered(max_attempts: int, *, session: Session) -> list[AlertRow]:
    """Open alerts whose delivery failed so far and may be retried."""
    query = select(AlertRow).where(AlertRow.delivered == False, AlertRow.attempts < max_attempts,  # noqa: E712
                                   col(AlertRow.open_key).is_not(None))
    return list(session.exec(query))


def alerts_between(since: datetime, until: datetime, *, session: Session) -> list[AlertRow]:
    """Alerts raised in [since, until)."""
    return list(session.exec(select(AlertRow).where(col(AlertRow.created_at) >= since,
                                                    col(AlertRow.created_at) < until)))
