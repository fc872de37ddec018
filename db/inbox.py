"""Inbox repository: signed Slack commands and interactions, recorded before the ack and marked done after their
work, so a process that dies in between leaves a row its successor answers on start."""

from __future__ import annotations

from datetime import datetime

from gpubot.db.core import execute
from gpubot.db.tables import InboxRow
from sqlalchemy import delete
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

__all__ = ["UnfinishedCommand", "finish", "prune_done", "record", "unfinished"]

_T = InboxRow.__table__


class UnfinishedCommand:
    """A recorded command whose work never finished."""

    def __init__(self, row: InboxRow) -> None:
        self.key, self.kind, self.response_url, self.received_at = (row.key, row.kind, row.response_url,
                                                                    row.received_at)


def record(key: str, kind: str, response_url: str | None, now: datetime, *, session: Session) -> bool:
    """Record a command before its ack; False when the same signed body was recorded already (a Slack retry)."""
    try:
        with session.begin_nested():
            session.add(InboxRow(key=key, kind=kind, response_url=response_url, received_at=now))
    except IntegrityError:
        return False
    return True


def finish(key: str, outcome: str, now: datetime, *, session: Session) -> None:
    """Mark a recorded command done (`finished`, or `interrupted` once its sender was told)."""
    row = session.get(InboxRow, key)
    if row is not None and row.done_at is None:
        row.done_at, row.outcome = now, outcome
        session.add(row)


def unfinished(*, session: Session) -> list[UnfinishedCommand]:
    """Recorded commands whose work never finished, oldest first."""
    rows = session.exec(select(InboxRow).where(InboxRow.done_at.is_(None)).order_by(InboxRow.received_at)).all()
    return [UnfinishedCommand(row) for row in rows]


def prune_done(before: datetime, limit: int, *, session: Session) -> int:
    """Delete up to `limit` commands done before `before` (never an unfinished one); how many went."""
    oldest = (core_select(_T.c.key).where(_T.c.done_at.is_not(None), _T.c.done_at < before)
              .order_by(_T.c.done_at).limit(limit))
    return execute(session, delete(_T).where(_T.c.key.in_(oldest))).rowcount
