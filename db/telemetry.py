"""Telemetry samples of booked GPUs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from gpubot.db.bookings import to_domain
from gpubot.db.core import execute, update_row
from gpubot.db.tables.bookings import AgentTokenRow, BookingRow
from gpubot.db.tables.telemetry import TelemetrySampleRow
from gpubot.domain.model import Booking
from gpubot.domain.ports import GpuReading
from gpubot.domain.telemetry import Sample
from sqlalchemy import bindparam, delete, func, insert, or_
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select

__all__ = ["add_readings", "add_samples", "booking_for_token", "latest_samples", "prune_samples", "samples_of",
           "samples_since", "set_token_hash"]


def add_samples(booking_id: int, readings: Sequence[GpuReading], at: datetime, *, session: Session) -> None:
    """Store one batch of readings."""
    add_readings([(booking_id, r, at) for r in readings], session=session)


# A sample already held for that booking, GPU and time (a replayed or flooded push) inserts nothing.
_INSERT_SAMPLE = {name: dialect.insert(TelemetrySampleRow.__table__).on_conflict_do_nothing(
    index_elements=["booking_id", "gpu_index", "at"]) for name, dialect in (("postgresql", postgresql),
                                                                            ("sqlite", sqlite))}


def add_readings(readings: Sequence[tuple[int, GpuReading, datetime]], *, session: Session) -> None:
    """Store readings of several bookings at once: (booking id, reading, when), in one statement."""
    # Core inserts, not ORM objects: every reading of every GPU passes here (pushes, pulls, the replay).
    if readings:
        execute(session, _INSERT_SAMPLE[session.get_bind().dialect.name], [
            {"booking_id": booking_id, "gpu_index": r.index, "util": r.util, "temp_c": r.temp_c,
             "mem_used_mib": r.mem_used_mib, "mem_total_mib": r.mem_total_mib, "processes": r.processes,
             "process_mem_mib": r.process_mem_mib, "at": at}
            for booking_id, r, at in readings])


def _sample(row: TelemetrySampleRow) -> Sample:
    return Sample(row.gpu_index, row.util, row.temp_c, row.at, row.processes)


def samples_since(booking_id: int, since: datetime, *, session: Session) -> list[Sample]:
    """A booking's samples from `since` on, oldest first."""
    rows = session.exec(select(TelemetrySampleRow).where(TelemetrySampleRow.booking_id == booking_id,
                                                         col(TelemetrySampleRow.at) >= since)
                        .order_by(col(TelemetrySampleRow.at)))
    return [_sample(r) for r in rows]


_CHUNK = 500  # ids per IN (...) list, well under every database's parameter limit


_S = TelemetrySampleRow.__table__.c
_SAMPLES_OF = select(_S.booking_id, _S.gpu_index, _S.util, _S.temp_c, _S.at, _S.processes).where(
    _S.booking_id.in_(bindparam("ids", expanding=True)), _S.at >= bindparam("since")).order_by(_S.at)


def samples_of(booking_ids: Sequence[int], since: datetime, *, session: Session) -> dict[int, list[Sample]]:
    """Samples from `since` on of many bookings at once (one query per 500 bookings), oldest first."""
    found: dict[int, list[Sample]] = {booking_id: [] for booking_id in booking_ids}
    ids = list(found)
    for start in range(0, len(ids), _CHUNK):
        rows = execute(session, _SAMPLES_OF, {"ids": ids[start:start + _CHUNK], "since": since})
        for booking_id, gpu, util, temp, at, processes in rows:
            found[booking_id].append(Sample(gpu, util, temp, at, processes))
    return found


def latest_samples(booking_id: int, *, session: Session) -> list[Sample]:
    """The newest sample of each GPU of a booking."""
    newest = (select(TelemetrySampleRow.gpu_index, func.max(TelemetrySampleRow.at).label("at"))
              .where(TelemetrySampleRow.booking_id == booking_id).group_by(TelemetrySampleRow.gpu_index).subquery())
    rows = session.exec(select(TelemetrySampleRow).join(
        newest, (TelemetrySampleRow.gpu_index == newest.c.gpu_index) & (TelemetrySampleRow.at == newest.c.at))
        .where(TelemetrySampleRow.booking_id == booking_id))
    latest: dict[int, Sample] = {}
    for row in rows:
        latest[row.gpu_index] = _sample(row)
    return [latest[i] for i in sorted(latest)]


def set_token_hash(booking_id: int, token_hash: str, *, session: Session, for_dm: bool = False,
                   at: datetime | None = None) -> None:
    """Store the hash of a booking's agent token: the start command's, or (`for_dm`, minted `at`) one a ready DM
    gives, which is added to those before it (each stays valid until the booking ends)."""
    column = "dm_token_hash" if for_dm else "agent_token_hash"
    update_row(session, BookingRow.__table__, "id", booking_id, {column: token_hash})
    if for_dm:
        execute(session, insert(AgentTokenRow.__table__), [{"token_hash": token_hash, "booking_id": booking_id,
                                                            "created_at": at or datetime.now(UTC)}])


def booking_for_token(token_hash: str, *, session: Session) -> Booking | None:
    """The booking whose agent token (the start command's or any a ready DM gave) hashes to `token_hash`."""
    given = select(AgentTokenRow.booking_id).where(AgentTokenRow.token_hash == token_hash)
    row = session.exec(select(BookingRow).where(or_(BookingRow.agent_token_hash == token_hash,
                                                    BookingRow.dm_token_hash == token_hash,
                                                    col(BookingRow.id).in_(given)))).first()
    return to_domain(row) if row else None


def prune_samples(before: datetime, limit: int, *, session: Session) -> int:
    """Delete up to `limit` samples taken before `before`, oldest first; how many went."""
    oldest = select(_S.id).where(_S.at < before).order_by(_S.at).limit(limit)
    return execute(session, delete(TelemetrySampleRow.__table__).where(_S.id.in_(oldest))).rowcount
