"""Claims on the GPU slots of team-pool machines: one row per (provider, host, slot), unique, so two processes
can never hand out the same GPU; the first insert wins and the loser picks other free slots or gives up."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from gpubot.db.core import execute, in_slots, slot_params
from gpubot.db.tables.bookings import BookingRow
from gpubot.db.tables.machines import PoolClaimRow
from gpubot.domain.model import BookingState
from sqlalchemy import bindparam, delete, func, literal, union_all
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

__all__ = ["ClaimConflict", "claim_slots", "held_on", "release_slots"]


def claim_slots(provider: str, host: str, capacity: int, count: int, name: str, now: datetime, *,
                session: Session) -> list[int] | None:
    """Claim `count` free slots of `host` for instance `name`; the slots, or None when too few are free.

    A claim already held by `name` is returned as it is (a retried launch claims nothing more).
    """
    held = session.exec(select(PoolClaimRow.provider, PoolClaimRow.host, PoolClaimRow.slot).where(
        PoolClaimRow.instance_name == name)).all()
    if held:
        return [slot for _p, _h, slot in held]
    taken = set(session.exec(select(PoolClaimRow.slot).where(PoolClaimRow.provider == provider,
                                                             PoolClaimRow.host == host)).all())
    free = [slot for slot in range(capacity) if slot not in taken][:count]
    if len(free) < count:
        return None
    try:
        with session.begin_nested():
            session.add_all([PoolClaimRow(provider=provider, host=host, slot=slot, instance_name=name,
                                          claimed_at=now) for slot in free])
    except (IntegrityError, OperationalError):  # a unique slot taken, or SQLite's writer lock moved under us
        raise ClaimConflict(host) from None
    return free


class ClaimConflict(Exception):
    """Another process claimed one of the slots at the same moment; read again and retry."""


def release_slots(name: str, *, session: Session) -> int:
    """Free every slot held by instance `name`; returns how many."""
    return session.execute(delete(PoolClaimRow).where(col(PoolClaimRow.instance_name) == name)).rowcount


_CLAIMS, _BOOKINGS = PoolClaimRow.__table__.c, BookingRow.__table__.c
_STATE_SLOTS = len(BookingState)
# Every pool probe reads both halves; one statement, so one snapshot and one round trip.
_HELD_ON = union_all(
    select(_CLAIMS.host, _CLAIMS.instance_name, func.count(), literal(True))
    .where(_CLAIMS.provider == bindparam("provider")).group_by(_CLAIMS.host, _CLAIMS.instance_name),
    select(_BOOKINGS.instance_id, _BOOKINGS.instance_name, _BOOKINGS.count, literal(False))
    .where(_BOOKINGS.provider == bindparam("provider"), in_slots(_BOOKINGS.state, "states", _STATE_SLOTS)))


def held_on(provider: str, states: Iterable[BookingState], *, session: Session
            ) -> tuple[list[tuple[str, str, int]], list[tuple[str | None, str | None, int]]]:
    """What holds GPUs of the pool `provider`: (host, instance name, GPUs) of every instance holding claimed slots,
    and (instance id, instance name, GPUs) of every booking in `states` placed on it."""
    claimed: list[tuple[str, str, int]] = []
    placed: list[tuple[str | None, str | None, int]] = []
    params = {"provider": provider, **slot_params("states", {s.value for s in states}, _STATE_SLOTS)}
    for first, name, gpus, is_claim in execute(session, _HELD_ON, params):
        (claimed if is_claim else placed).append((first, name, int(gpus)))
    return claimed, placed
