"""Core statements on a session's connection: the hot paths of the ledger skip the ORM layer."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from sqlalchemy import Table, bindparam, update
from sqlalchemy.engine import Connection, CursorResult
from sqlmodel import Session

__all__ = ["execute", "in_slots", "slot_params", "slots_for", "update_row"]


def execute(session: Session | Connection, statement, params: dict | list[dict] | None = None) -> CursorResult:
    """Run a Core statement in the session's transaction (or on a Core connection's), without the ORM's
    execution layer.

    Through `Session.execute` an UPDATE also synchronises the identity map and every statement builds ORM
    compile state; on the per-booking paths (state changes, telemetry, intents) that cost several times the
    SQL itself (see the replay profile in docs/replay.md). Rows come back as plain tuples.
    """
    connection = session if isinstance(session, Connection) else session.connection()
    return connection.execute(statement, params)


def in_slots(column, name: str, slots: int):
    """`column IN (:name_0, …, :name_{slots-1})`: a fixed list of bound parameters, filled by `slot_params`.

    An expanding IN (`bindparam(expanding=True)`) renders the statement's SQL again on every execution (P6: 13 s
    of a 395 s profiled replay, for state lists that never change); a fixed list is compiled once."""
    return column.in_([bindparam(f"{name}_{i}") for i in range(slots)])


def slot_params(name: str, values: Iterable[object], slots: int) -> dict[str, object]:
    """The parameters of `in_slots(…, name, slots)` for `values` (at most `slots` of them). The unused slots hold
    NULL, which `IN` never matches, so the test is `column IN values` exactly (an empty `values` matches nothing)."""
    values = list(values)
    if len(values) > slots:
        raise ValueError(f"{len(values)} values for {slots} slots")
    return {f"{name}_{i}": values[i] if i < len(values) else None for i in range(slots)}


def slots_for(count: int) -> int:
    """Slots for `count` values: a power of two from 8, so a few statement shapes serve every list."""
    slots = 8
    while slots < count:
        slots *= 2
    return slots


def update_row(session: Session, table: Table, key: str, key_value: object, values: dict[str, object], *,
               only_if: tuple[str, Iterable[object]] | None = None) -> int:
    """`UPDATE table SET values WHERE key = key_value [AND column IN (…)]`; how many rows changed.

    The statement is built once per shape (table, key, columns set, IN slots) and reused with new values: building
    and hashing a fresh statement on every state change cost more than running it.
    """
    allowed = list(only_if[1]) if only_if else []
    slots = slots_for(len(allowed)) if only_if else 0
    statement = _update_statement(table, key, tuple(sorted(values)), only_if[0] if only_if else None, slots)
    params = {f"set_{column}": value for column, value in values.items()} | {"where_key": key_value}
    if only_if:
        params |= slot_params("where_in", allowed, slots)
    return execute(session, statement, params).rowcount


@lru_cache(maxsize=256)
def _update_statement(table: Table, key: str, columns: tuple[str, ...], in_column: str | None, slots: int):
    where = [table.c[key] == bindparam("where_key")]
    if in_column:
        where.append(in_slots(table.c[in_column], "where_in", slots))
    return update(table).where(*where).values({column: bindparam(f"set_{column}") for column in columns})
