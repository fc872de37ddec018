"""Launch intents (written before a launch, completed after) and the record of acquisition attempts."""

from __future__ import annotations

from datetime import datetime

from gpubot.db.core import execute, update_row
from gpubot.db.tables.bookings import AcquisitionAttemptRow, LaunchIntentRow
from gpubot.domain.model import Offer
from sqlalchemy import func, insert
from sqlmodel import Session, col, select

__all__ = ["complete_intent", "failed_tries_of", "intents_by_name", "recent_attempts", "record_attempt",
           "record_intent"]

_INSERT_INTENT = insert(LaunchIntentRow.__table__)
_INSERT_ATTEMPT = insert(AcquisitionAttemptRow.__table__)


def record_intent(booking_id: int, offer: Offer, name: str, now: datetime, *, session: Session) -> None:
    """Persist the intent to launch `name` on `offer` before the provider is called."""
    execute(session, _INSERT_INTENT, dict(
        booking_id=booking_id, provider=offer.provider, region=offer.region, offer_ref=offer.ref, gpu=offer.gpu,
        count=offer.count, price_per_gpu_hour=offer.price_per_gpu_hour, currency=offer.currency, name=name,
        created_at=now, updated_at=now))


def complete_intent(name: str, state: str, now: datetime, *, session: Session,
                    instance_id: str | None = None) -> None:
    """Mark an intent launched, failed or terminated."""
    values: dict = {"state": state, "updated_at": now}
    if instance_id:
        values["instance_id"] = instance_id
    update_row(session, LaunchIntentRow.__table__, "name", name, values)


def intents_by_name(names: list[str], *, session: Session) -> dict[str, LaunchIntentRow]:
    """Launch intents by instance name."""
    rows = session.exec(select(LaunchIntentRow).where(col(LaunchIntentRow.name).in_(names))) if names else []
    return {row.name: row for row in rows}


def record_attempt(booking_id: int, provider: str, region: str | None, gpu: str | None, outcome: str,
                   latency_ms: int, now: datetime, *, session: Session, detail: str | None = None) -> None:
    """Record one launch attempt."""
    execute(session, _INSERT_ATTEMPT, dict(
        booking_id=booking_id, provider=provider, region=region, gpu=gpu, outcome=outcome,
        error_kind=None if outcome == "launched" else outcome, detail=(detail or "")[:500] or None,
        latency_ms=latency_ms, at=now))


def recent_attempts(booking_id: int, *, session: Session, limit: int = 20) -> list[AcquisitionAttemptRow]:
    """The latest attempts of a booking, oldest first."""
    rows = session.exec(select(AcquisitionAttemptRow).where(AcquisitionAttemptRow.booking_id == booking_id)
                        .order_by(col(AcquisitionAttemptRow.id).desc()).limit(limit))
    return list(reversed(list(rows)))


_A = AcquisitionAttemptRow.__table__.c


def failed_tries_of(booking_ids: list[int], *, session: Session, limit: int = 20
                    ) -> dict[int, list[tuple[str, str, str]]]:
    """(provider, region, outcome) of the attempts that did not launch among each booking's latest `limit`, oldest
    first, for many bookings in one statement (the digest lists every failed booking of a day)."""
    if not booking_ids:
        return {}
    newest = func.row_number().over(partition_by=_A.booking_id, order_by=_A.id.desc()).label("newest")
    latest = select(_A.booking_id, _A.id, _A.provider, _A.region, _A.outcome, newest).where(
        _A.booking_id.in_(sorted(set(booking_ids)))).subquery()
    rows = execute(session, select(latest.c.booking_id, latest.c.provider, latest.c.region, latest.c.outcome)
                   .where(latest.c.newest <= limit, latest.c.outcome != "launched")
                   .order_by(latest.c.booking_id, latest.c.id))
    found: dict[int, list[tuple[str, str, str]]] = {}
    for booking_id, provider, region, outcome in rows:
        found.setdefault(booking_id, []).append((provider, region or "", outcome))
    return found
