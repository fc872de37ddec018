"""What the team pool's machines are lending right now, and the claims that hand out their GPUs.

A GPU slot is claimed in the database (`pool_claims`, unique per host and slot) before a pool launch succeeds,
so replicas sharing PostgreSQL (or threads on SQLite) can never hand out the same GPU twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from functools import partial

from gpubot.db import pool_claims
from gpubot.db.database import Database
from gpubot.domain.model import ACTIVE_STATES, Booking
from gpubot.providers.registry import GpuSlots

__all__ = ["claim_gpus", "host_of", "ledger_slots", "pool_allocations", "release_gpus"]

log = logging.getLogger(__name__)

CLAIM_TRIES = 20


def ledger_slots(db: Database, now: Callable[[], datetime]) -> GpuSlots:
    """Who holds the team's own machines' GPUs, from the ledger `db`, with claims safe across processes (`now`:
    the engine's clock, for the claims' times)."""
    return GpuSlots(held=partial(pool_allocations, db), claim=partial(claim_gpus, db, now),
                    release=partial(release_gpus, db))


def pool_allocations(db: Database, provider: str) -> list[tuple[str, str, int]]:
    """(host, instance name, GPUs) held on the pool `provider`: every claim, and active bookings without one."""
    with db.session() as session:
        claimed, held = pool_claims.held_on(provider, ACTIVE_STATES, session=session)
    names = {name for _host, name, _gpus in claimed}
    return claimed + [((instance_id or "").split("/", 1)[0], name or "", count)
                      for instance_id, name, count in held if name not in names]


def claim_gpus(db: Database, now: Callable[[], datetime], provider: str) -> Callable[[str, int, int, str], bool]:
    """The pool's `claim`: take GPU slots of a host for an instance, retrying when another process raced us."""
    def claim(host: str, capacity: int, count: int, name: str) -> bool:
        for _ in range(CLAIM_TRIES):
            try:
                with db.session() as session:
                    return pool_claims.claim_slots(provider, host, capacity, count, name, now(),
                                                   session=session) is not None
            except pool_claims.ClaimConflict:
                log.debug("pool claim on %s raced another; reading again", host)
        return False
    return claim


def release_gpus(db: Database, name: str) -> None:
    """The pool's `unclaim`: free the slots the instance `name` held."""
    with db.session() as session:
        pool_claims.release_slots(name, session=session)


def host_of(booking: Booking) -> str:
    """The machine a booking runs on, as monitoring knows it: the pool host, else the instance name."""
    if booking.instance_id and "/" in booking.instance_id:
        return booking.instance_id.split("/", 1)[0]
    return booking.instance_name or ""
