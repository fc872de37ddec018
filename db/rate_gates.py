"""Rate gates: turns at a paced vendor API, booked in one row per key so replicas on one database share them.

Booking a turn locks the rows of its gates (in key order, so two bookers never wait on each other crosswise),
takes the latest of their next free instants and `now`, and moves each row to that turn plus its interval. Two
replicas can never get the same turn: on PostgreSQL the second SELECT … FOR UPDATE waits until the first
transaction commits and then reads the moved rows; on SQLite the transaction holds the write lock from its
BEGIN IMMEDIATE.
"""

from __future__ import annotations

from gpubot.db.core import execute
from gpubot.db.tables.operations import RateGateRow
from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

__all__ = ["take_turn"]

_GATES = RateGateRow.__table__
_SEED = {name: dialect.insert(_GATES).on_conflict_do_nothing(index_elements=["key"])
         for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))}
_LOCK = select(_GATES.c.next_at).where(_GATES.c.key == bindparam("gate")).with_for_update()
_MOVE = update(_GATES).where(_GATES.c.key == bindparam("gate")).values(next_at=bindparam("turn_end"))


def take_turn(gates: list[tuple[str, float]], now: float, *, session: Session) -> float:
    """Book the next turn free under every (key, interval) gate; when it is (epoch seconds)."""
    ordered = sorted(gates)
    execute(session, _SEED[session.get_bind().dialect.name], [{"key": key, "next_at": now} for key, _ in ordered])
    free = [float(execute(session, _LOCK, {"gate": key}).scalar_one()) for key, _ in ordered]
    turn = max([now, *free])
    execute(session, _MOVE, [{"gate": key, "turn_end": turn + interval} for key, interval in ordered])
    return turn
