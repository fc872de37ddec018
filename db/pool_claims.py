"""Claims on the GPU slots of team-pool machines: one row per (provider, host, slot), unique, so two processes
can never hand out the same GPU; the first insert wins and the loser picks other free slots or gives up."""

from __future__ import annotations

from datetime import datetime

from gpubot.db.core import execute
from gpubot.db.tables.machines import PoolClaimRow
from sqlalchemy import bindparam, delete, func
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

__all__ = ["ClaimConflict", "claim_slots", "claims", "release_slots"]


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


_CLAIMS = PoolClaimRow.__table__.c
_CLAIMS_OF = select(_CLAIMS.host, _CLAIMS.instance_name, func.count()).where(
    _CLAIMS.provider == bindparam("provider")).group_by(_CLAIMS.host, _CLAIMS.instance_name)  # every pool probe


def claims(provider: str, *, session: Session) -> list[tuple[str, str, int]]:
    """(host, instance name, GPUs) for every instance holding slots of the pool `provider`."""
    return [(host, name, int(n)) for host, name, n in execute(session, _CLAIMS_OF, {"provider": provider})]
