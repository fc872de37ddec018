"""The outbox: notices owed to a delivery channel, kept until the channel accepted them.

`owe` writes a notice in the caller's transaction (the one that changes the state it tells of), once per
(channel, key): that unique key is the one place where repeats are dropped. `claim` hands due rows to one
worker for a lease: on PostgreSQL with `FOR UPDATE SKIP LOCKED`, so replicas claim disjoint rows; on SQLite the
transaction's write lock (BEGIN IMMEDIATE, db.engine) already serialises claimers. A worker that dies holding a
claim loses it when the lease runs out, and the row is claimed again — marked `in_doubt`, since the dead worker
may have handed it over before it died (`sending` stays set until the outcome is recorded).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpubot.db.core import execute
from gpubot.db.tables.bookings import BookingRow
from gpubot.db.tables.delivery import OutboxRow
from gpubot.domain.model import FINAL_STATES
from gpubot.domain.notices import Audience, Notice, from_record, to_record
from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session

__all__ = ["Owed", "claim", "counts", "forget_claims", "is_pending", "mark_all_delivered", "mark_delivered",
           "mark_failed", "owe", "owed_notices", "pending_keys", "postpone", "prune_finished", "retry_later",
           "was_delivered", "withdraw"]

_T = OutboxRow.__table__
_B = BookingRow.__table__


@dataclass(frozen=True)
class Owed:
    """A claimed row: the notice, the channel it goes to, how often it was tried before, and whether an earlier
    hand-over may have sent it (a worker died, or its call timed out, before the outcome was known)."""

    id: int
    channel: str
    notice: Notice
    attempts: int
    in_doubt: bool = False


def owe(notice: Notice, now: datetime, *, session: Session, channels: tuple[str, ...] = ("slack",)) -> bool:
    """Owe `notice` to each channel in the session's transaction; False when it was already owed everywhere."""
    values = {"notice_key": notice.key, "kind": type(notice).__name__,
              "booking_id": getattr(notice, "booking_id", None), "attempts": 0, "created_at": now, "due_at": now,
              "payload": json.dumps(to_record(notice), separators=(",", ":"))}
    # One statement per channel, the unique (channel, key) deciding: no savepoint, no ORM object (a replay owes
    # thousands of notices a second).
    insert = _INSERTS[session.get_bind().dialect.name]
    added = [execute(session, insert, {**values, "channel": channel}).first() for channel in channels]
    return any(row is not None for row in added)


_INSERTS = {name: dialect_insert(_T).on_conflict_do_nothing(index_elements=["channel", "notice_key"]).returning(_T.c.id)
            for name, dialect_insert in (("sqlite", sqlite_insert), ("postgresql", postgresql_insert))}


def claim(now: datetime, lease: timedelta, limit: int, *, session: Session, key: str | None = None) -> list[Owed]:
    """Claim up to `limit` due rows (only those of notice `key` when given), oldest first, for `lease`; older
    booking-message notices that a newer one of the same booking supersedes are marked delivered instead (the
    message shows only its newest state)."""
    due = (select(_T.c.id, _T.c.channel, _T.c.payload, _T.c.attempts, _T.c.booking_id, _T.c.kind, _T.c.sending)
           .where(_T.c.delivered_at.is_(None), _T.c.failed_at.is_(None), _T.c.due_at <= now,
                  or_(_T.c.claimed_until.is_(None), _T.c.claimed_until < now))
           .order_by(_T.c.id).limit(limit))
    if key is not None:
        due = due.where(_T.c.notice_key == key)
    if session.get_bind().dialect.name == "postgresql":
        due = due.with_for_update(skip_locked=True)
    else:
        session.connection()  # SQLite: BEGIN IMMEDIATE, the write lock, is held from here to commit
    rows = list(execute(session, due))
    owed, newest = [], {}
    for row in rows:
        record = json.loads(row.payload)
        notice = from_record(record)
        if notice.audience is Audience.BOOKING_MESSAGE:
            newest[(row.channel, row.booking_id)] = row.id
        owed.append(Owed(row.id, row.channel, notice, row.attempts, bool(row.sending)))
    stale = [o.id for o in owed if o.notice.audience is Audience.BOOKING_MESSAGE
             and newest[(o.channel, o.notice.booking_id)] != o.id]  # type: ignore[attr-defined]
    if stale:
        execute(session, update(_T).where(_T.c.id.in_(stale)).values(delivered_at=now, last_error="superseded"))
    owed = [o for o in owed if o.id not in stale]
    if owed:
        execute(session, update(_T).where(_T.c.id.in_([o.id for o in owed])).values(claimed_until=now + lease,
                                                                                    sending=True))
    return owed


def mark_delivered(row_id: int, now: datetime, *, session: Session) -> None:
    """The channel accepted the row's notice: never send it again."""
    mark_all_delivered([row_id], now, session=session)


def mark_all_delivered(row_ids: Sequence[int], now: datetime, *, session: Session) -> None:
    """The channel accepted each row's notice (a delivery turn's, recorded together): one statement."""
    if row_ids:
        execute(session, update(_T).where(_T.c.id.in_(list(row_ids))).values(delivered_at=now, claimed_until=None,
                                                                              sending=False))


def retry_later(row_id: int, due_at: datetime, error: str, *, session: Session, maybe_sent: bool = False) -> None:
    """The channel could not take it now: try again at `due_at` (the claim is let go); `maybe_sent` when the
    channel cannot tell whether it took it (a call that timed out), so the next try looks before it sends."""
    execute(session, update(_T).where(_T.c.id == row_id).values(
        due_at=due_at, claimed_until=None, attempts=_T.c.attempts + 1, last_error=error[:200], sending=maybe_sent))


def postpone(row_id: int, due_at: datetime, *, session: Session) -> None:
    """Not this row's turn yet (it follows another): let go of the claim until `due_at`, no attempt counted."""
    execute(session, update(_T).where(_T.c.id == row_id).values(due_at=due_at, claimed_until=None, sending=False))


def is_pending(channel: str, *keys: str, session: Session) -> bool:
    """Whether any notice of `keys` is owed on `channel` and neither delivered nor given up yet (one query)."""
    return bool(list(execute(session, select(_T.c.id).where(
        _T.c.channel == channel, _T.c.notice_key.in_(keys), _T.c.delivered_at.is_(None), _T.c.failed_at.is_(None))
        .limit(1))))


def pending_keys(keys: set[str], *, session: Session) -> set[tuple[str, str]]:
    """(channel, key) of each notice of `keys` owed and neither delivered nor given up yet (one query)."""
    if not keys:
        return set()
    return {(row.channel, row.notice_key) for row in execute(session, select(_T.c.channel, _T.c.notice_key).where(
        _T.c.notice_key.in_(sorted(keys)), _T.c.delivered_at.is_(None), _T.c.failed_at.is_(None)))}


def withdraw(channel: str, key: str, now: datetime, reason: str, *, session: Session) -> bool:
    """Give up the notice `key` on `channel` if it is not delivered and no worker holds it (what it tells is
    over); True when it was withdrawn."""
    open_and_free = and_(_T.c.channel == channel, _T.c.notice_key == key, _T.c.delivered_at.is_(None),
                         _T.c.failed_at.is_(None), or_(_T.c.claimed_until.is_(None), _T.c.claimed_until < now))
    return execute(session, update(_T).where(open_and_free).values(failed_at=now, last_error=reason[:200])
                   ).rowcount == 1


def was_delivered(channel: str, key: str, *, session: Session) -> bool:
    """Whether the channel accepted the notice `key`."""
    return bool(list(execute(session, select(_T.c.id).where(
        _T.c.channel == channel, _T.c.notice_key == key, _T.c.delivered_at.is_not(None)))))


def mark_failed(row_id: int, now: datetime, error: str, *, session: Session) -> None:
    """Give the row up: the channel refused it for good, or it ran out of attempts."""
    execute(session, update(_T).where(_T.c.id == row_id).values(
        failed_at=now, claimed_until=None, sending=False, attempts=_T.c.attempts + 1, last_error=error[:200]))


def forget_claims(*, session: Session) -> int:
    """Let go of every claim (at start-up, when this process alone owns the ledger: claims are a dead one's).

    Reads first and writes only when a claim is left, so a start-up with nothing to settle stays read-only (a
    read-only ledger then starts, live but not ready, instead of failing here)."""
    claimed = and_(_T.c.claimed_until.is_not(None), _T.c.delivered_at.is_(None))
    if not list(execute(session, select(_T.c.id).where(claimed).limit(1))):
        return 0
    return execute(session, update(_T).where(claimed).values(claimed_until=None)).rowcount


def counts(*, session: Session) -> dict[str, int]:
    """How many rows are pending, delivered and failed (for metrics and tests)."""
    pending = and_(_T.c.delivered_at.is_(None), _T.c.failed_at.is_(None))
    result = {}
    for name, where in (("pending", pending), ("delivered", _T.c.delivered_at.is_not(None)),
                        ("failed", _T.c.failed_at.is_not(None))):
        result[name] = len(list(execute(session, select(_T.c.id).where(where))))
    return result


def owed_notices(channel: str, *, session: Session) -> list[Notice]:
    """Every notice still owed on `channel`, oldest first (a replay reads what it would have sent)."""
    pending = and_(_T.c.channel == channel, _T.c.delivered_at.is_(None), _T.c.failed_at.is_(None))
    return [from_record(json.loads(payload))
            for payload in execute(session, select(_T.c.payload).where(pending).order_by(_T.c.id)).scalars()]


def prune_finished(before: datetime, limit: int, *, session: Session) -> int:
    """Delete up to `limit` rows delivered or given up before `before`; how many went.

    Only rows of an ended booking: a row's key is what keeps a cause that is told again every tick (a silent
    machine, a budget past its threshold all month, an alert still firing) from being told twice, so rows of a
    live booking and rows of no booking (budget, digest, alerts: a few a day) are kept."""
    finished = or_(_T.c.delivered_at < before, _T.c.failed_at < before)
    booking_over = _B.c.state.in_([s.value for s in FINAL_STATES])
    oldest = (select(_T.c.id).select_from(_T.join(_B, _B.c.id == _T.c.booking_id))
              .where(finished, booking_over).order_by(_T.c.id).limit(limit))
    return execute(session, delete(_T).where(_T.c.id.in_(oldest))).rowcount
