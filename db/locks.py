"""Budget locks: the decision that a booking fits its budgets and the hold that records it are one atomic step.

SQLite has one writer at a time, and every transaction starts with BEGIN IMMEDIATE (db.engine), so a transaction
that reads the commitments and then writes its hold already holds the write lock from its first statement: no
other replica or thread can slip a hold in between. PostgreSQL runs writers concurrently (READ COMMITTED), so
there each budget scope the booking touches is locked with a transaction-level advisory lock, keyed by the
schema and the scope, taken in one fixed (sorted) order before anything is read, and released at commit or
rollback. A transaction that takes them must take them first, before it locks any row.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpubot.db.core import execute
from sqlalchemy import bindparam, text
from sqlmodel import Session

__all__ = ["lock_scopes"]

# One statement for every scope: unnest yields the sorted scopes in order, and each lock is taken as its row is
# produced (a volatile function in the output is evaluated row by row, after the ORDER BY), so the order is the
# same fixed one as with a statement per scope.
_ADVISORY = text("SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || ':budget:' || scope, 0)) "
                 "FROM unnest(CAST(:scopes AS text[])) WITH ORDINALITY AS taken(scope, n) ORDER BY n"
                 ).bindparams(bindparam("scopes"))


def lock_scopes(scopes: Iterable[str], *, session: Session) -> None:
    """Hold the budget lock of each scope until the session's transaction ends (in sorted order)."""
    if session.get_bind().dialect.name != "postgresql":
        session.connection()  # SQLite: BEGIN IMMEDIATE, the write lock, is taken here
        return
    if ordered := sorted(set(scopes)):
        execute(session, _ADVISORY, {"scopes": ordered}).all()
