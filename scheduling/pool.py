"""What the team pool's machines are lending right now, read from the ledger's active bookings."""

from __future__ import annotations

from db import bookings as repo
from domain.model import ACTIVE_STATES, Booking
from scheduling.engine import Engine

__all__ = ["host_of", "pool_allocations"]


def pool_allocations(engine: Engine, provider: str) -> list[tuple[str, str, int]]:
    """(host, instance name, GPUs) for every active booking on the pool `provider`."""
    with engine.db.session() as session:
        held = repo.list_bookings(session=session, states=ACTIVE_STATES)
    return [((b.instance_id or "").split("/", 1)[0], b.instance_name or "", b.count)
            for b in held if b.provider == provider]


def host_of(booking: Booking) -> str:
    """The machine a booking runs on, as monitoring knows it: the pool host, else the instance name."""
    if booking.instance_id and "/" in booking.instance_id:
        return booking.instance_id.split("/", 1)[0]
    return booking.instance_name or ""
