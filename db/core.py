"""Core statements on a session's connection: the hot paths of the ledger skip the ORM layer."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from sqlalchemy import Table, bindparam, update
from sqlalchemy.engine import Connection, CursorResult
from sqlmodel import Session

__all__ = ["execute", "update_row"]


def execute(session: Session | Connection, statement, params: dict | list[dict] | None = None) -> CursorResult:
    """Run a Core statement in the session's transaction (or on a Core connection's), without the ORM's
    execution layer.

    Through `Session.execute` an UPDATE also synchronises the identity map and every statement builds ORM
    compile state; on the per-booking paths (state changes, telemetry, intents) that cost several times the
    SQL itself (see the replay profile in docs/replay.md). Rows come back as plain tuples.
    """
    connection = session if isinstance(session, Connection) else session.connection()
    return connection.execute(statement, params)


def update_row(session: Session, table: Table, key: str, key_value: object, values: dict[str, object], *,
               only_if: tuple[str, Iterable[object]] | None = None) -> int:
    """`UPDATE table SET values WHERE key = key_value [AND column IN (…)]`; how many rows changed.

    The statement is built once per shape (table, key, columns set) and reused with new values: building and
    hashing a fresh statement on every state change cost more than running it.
    """
    statement = _update_statement(table, key, tuple(sorted(values)), only_if[0] if only_if else None)
    params = {f"set_{column}": value for column, value in values.items()} | {"where_key": key_value}
    if only_if:
        params["where_in"] = list(only_if[1])
    return execute(session, statement, params).rowcount


@lru_cache(maxsize=256)
def _update_statement(table: Table, key: str, columns: tuple[str, ...], in_column: str | None):
    where = [table.c[key] == bindparam("where_key")]
    if in_column:
        where.append(table.c[in_column].in_(bindparam("where_in", expanding=True)))
    return update(table).where(*where).values({column: bindparam(f"set_{column}") for column in columns})
