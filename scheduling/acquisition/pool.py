"""What the team pool's machines are lending right now, and the claims that hand out their GPUs.

A GPU slot is claimed in the database (`pool_claims`, unique per host and slot) before a pool launch succeeds,
so replicas sharing PostgreSQL (or threads on SQLite) can never hand out the same GPU twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gpubot.db import pool_claims
from gpubot.domain.model import ACTIVE_STATES, Booking
from gpubot.scheduling.engine import Engine

__all__ = ["claim_gpus", "host_of", "pool_allocations", "release_gpus"]

log = logging.getLogger(__name__)

CLAIM_TRIES = 20


def pool_allocations(engine: Engine, provider: str) -> list[tuple[str, str, int]]:
    """(host, instance name, GPUs) held on the pool `provider`: every claim, and active bookings without one."""
    with engine.db.session() as session:
        claimed, held = pool_claims.held_on(provider, ACTIVE_STATES, session=session)
    names = {name for _host, name, _gpus in claimed}
    return claimed + [((instance_id or "").split("/", 1)[0], name or "", count)
                      for instance_id, name, count in held if name not in names]


def claim_gpus(engine_ref: Callable[[], Engine], provider: str) -> Callable[[str, int, int, str], bool]:
    """The pool's `claim`: take GPU slots of a host for an instance, retrying when another process raced us."""
    def claim(host: str, capacity: int, count: int, name: str) -> bool:
        engine = engine_ref()
        for _ in range(CLAIM_TRIES):
            try:
                with engine.db.session() as session:
                    return pool_claims.claim_slots(provider, host, capacity, count, name, engine.now(),
                                                   session=session) is not None
            except pool_claims.ClaimConflict:
                log.debug("pool claim on %s raced another; reading again", host)
        return False
    return claim


def release_gpus(engine_ref: Callable[[], Engine]) -> Callable[[str], None]:
    """The pool's `unclaim`: free the slots an instance held."""
    def unclaim(name: str) -> None:
        with engine_ref().db.session() as session:
            pool_claims.release_slots(name, session=session)
    return unclaim


def host_of(booking: Booking) -> str:
    """The machine a booking runs on, as monitoring knows it: the pool host, else the instance name."""
    if booking.instance_id and "/" in booking.instance_id:
        return booking.instance_id.split("/", 1)[0]
    return booking.instance_name or ""
