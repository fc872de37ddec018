"""Inbox repository: signed Slack commands and interactions, recorded before the ack and marked done after their
work, so a process that dies in between leaves a row its successor answers on start."""

from __future__ import annotations

from datetime import datetime

from gpubot.db.core import execute
from gpubot.db.tables.delivery import InboxRow
from sqlalchemy import bindparam, delete, update
from sqlalchemy import select as core_select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlmodel import Session, select

__all__ = ["UnfinishedCommand", "finish", "prune_done", "record", "unfinished"]

_T = InboxRow.__table__


class UnfinishedCommand:
    """A recorded command whose work never finished."""

    def __init__(self, row: InboxRow) -> None:
        self.key, self.kind, self.response_url, self.received_at = (row.key, row.kind, row.response_url,
                                                                    row.received_at)


def record(key: str, kind: str, response_url: str | None, now: datetime, *, session: Session | Connection) -> bool:
    """Record a command before its ack; False when the same signed body was recorded already (a Slack retry).
    One Core statement: through the ORM (a savepoint and a flush) it cost more CPU than the floor's whole ack."""
    insert = _INSERTS[(session if isinstance(session, Connection) else session.get_bind()).dialect.name]
    row = {"key": key, "kind": kind, "response_url": response_url, "received_at": now}
    return execute(session, insert, row).first() is not None


def finish(key: str, outcome: str, now: datetime, *, session: Session | Connection) -> None:
    """Mark a recorded command done (`finished`, or `interrupted` once its sender was told)."""
    execute(session, _FINISH, {"k": key, "done_at": now, "outcome": outcome})


_INSERTS = {name: dialect_insert(_T).on_conflict_do_nothing(index_elements=["key"]).returning(_T.c.key)
            for name, dialect_insert in (("sqlite", sqlite_insert), ("postgresql", postgresql_insert))}
_FINISH = (update(_T).where(_T.c.key == bindparam("k"), _T.c.done_at.is_(None))
           .values(done_at=bindparam("done_at"), outcome=bindparam("outcome")))


def unfinished(*, session: Session) -> list[UnfinishedCommand]:
    """Recorded commands whose work never finished, oldest first."""
    rows = session.exec(select(InboxRow).where(InboxRow.done_at.is_(None)).order_by(InboxRow.received_at)).all()
    return [UnfinishedCommand(row) for row in rows]


def prune_done(before: datetime, limit: int, *, session: Session) -> int:
    """Delete up to `limit` commands done before `before` (never an unfinished one); how many went."""
    oldest = (core_select(_T.c.key).where(_T.c.done_at.is_not(None), _T.c.done_at < before)
              .order_by(_T.c.done_at).limit(limit))
    return execute(session, delete(_T).where(_T.c.key.in_(oldest))).rowcount
