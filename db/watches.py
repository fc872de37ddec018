"""Watch repository: `/gpu watch` requests and the offer that fired each; state changes are compare-and-set."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.db.tables.people import WatchRow
from gpubot.domain.model import Offer
from gpubot.domain.watches import Watch
from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

__all__ = ["add_watch", "cancel_watch", "due_to_expire", "find_by_request_key", "fire_watch", "get_watch",
           "list_watches", "set_state"]


def _to_domain(row: WatchRow) -> Watch:
    offer = None
    if row.offer_provider:
        offer = Offer(row.offer_provider, row.offer_region or "", row.gpu, row.count,
                      Decimal(row.offer_price or 0), row.offer_currency or "", ref=row.offer_ref or "")
    duration = timedelta(seconds=row.duration_s) if row.duration_s is not None else None
    return Watch(row.id or 0, row.owner, row.gpu, row.count, row.provider, row.state, row.created_at,
                 row.expires_at, row.fired_at, offer, duration)


def add_watch(owner: str, gpu: str, count: int, provider: str | None, now: datetime, expires_at: datetime, *,
              duration: timedelta, session: Session, request_key: str | None = None) -> Watch:
    """Insert an active watch for bookings of `duration` and return it with its id; the watch `request_key` made
    already when one did (a second delivery of the same command adds nothing, even racing the first)."""
    if request_key is not None and (found := find_by_request_key(request_key, session=session)) is not None:
        return found
    row = WatchRow(owner=owner, gpu=gpu, count=count, provider=provider, created_at=now, expires_at=expires_at,
                   duration_s=int(duration.total_seconds()), request_key=request_key)
    try:
        with session.begin_nested():
            session.add(row)
            session.flush()
    except IntegrityError:
        found = find_by_request_key(request_key or "", session=session)
        if found is None:
            raise
        return found
    return _to_domain(row)


def find_by_request_key(key: str, *, session: Session) -> Watch | None:
    """The watch a given Slack request made, or None."""
    row = session.exec(select(WatchRow).where(WatchRow.request_key == key)).first()
    return _to_domain(row) if row else None


def get_watch(watch_id: int, *, session: Session) -> Watch | None:
    """The watch with that id, or None."""
    row = session.get(WatchRow, watch_id)
    return _to_domain(row) if row else None


def list_watches(*, session: Session, owner: str | None = None, states: tuple[str, ...] = ("active",),
                 live_at: datetime | None = None) -> list[Watch]:
    """Watches in `states` (of one owner), oldest first; with `live_at`, only those not yet expired then."""
    query = select(WatchRow).where(col(WatchRow.state).in_(states)).order_by(col(WatchRow.id))
    if owner:
        query = query.where(WatchRow.owner == owner)
    if live_at is not None:
        query = query.where(WatchRow.expires_at > live_at)
    return [_to_domain(row) for row in session.exec(query)]


def due_to_expire(now: datetime, *, session: Session) -> list[Watch]:
    """Active watches whose time is up."""
    query = select(WatchRow).where(WatchRow.state == "active", WatchRow.expires_at <= now)
    return [_to_domain(row) for row in session.exec(query)]


def set_state(watch_id: int, from_state: str, to_state: str, *, session: Session, **fields: object) -> bool:
    """Move a watch from one state to another; True when this call moved it."""
    result = session.execute(update(WatchRow).where(col(WatchRow.id) == watch_id, WatchRow.state == from_state)
                             .values(state=to_state, **fields))
    return result.rowcount == 1


def fire_watch(watch_id: int, offer: Offer, now: datetime, *, session: Session) -> bool:
    """Mark an active watch fired with the offer found; True for the one call that fired it."""
    return set_state(watch_id, "active", "fired", session=session, fired_at=now, offer_provider=offer.provider,
                     offer_region=offer.region, offer_ref=offer.ref, offer_price=offer.price_per_gpu_hour,
                     offer_currency=offer.currency)


def cancel_watch(watch_id: int, *, session: Session) -> bool:
    """Stop an active watch; True when it was active."""
    return set_state(watch_id, "active", "cancelled", session=session)
