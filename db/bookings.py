"""Booking repository: load and save bookings as domain objects; state changes are compare-and-set."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from functools import lru_cache

from gpubot.db.core import execute, in_slots, slot_params, slots_for, update_row
from gpubot.db.shapes import decode_shapes, encode_shapes
from gpubot.db.tables.bookings import BookingRow
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.replacing import replacements
from sqlalchemy import bindparam, func, insert, or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

__all__ = [
    "COLUMNS",
    "IN_STATES",
    "DuplicateRequest",
    "add_booking",
    "booking_views",
    "bookings_by_id",
    "bookings_where",
    "count_gpus_held",
    "find_by_request_key",
    "first_of_each_shape",
    "from_columns",
    "get_booking",
    "leases",
    "list_bookings",
    "rounds_of",
    "set_fields",
    "set_message",
    "state_params",
    "transition",
]

_BOOKINGS = BookingRow.__table__  # Core statements on the table skip the ORM's per-statement work
_INSERT = insert(_BOOKINGS)
_DOMAIN_FIELDS = [f for f in Booking.__dataclass_fields__ if f not in {"duration", "state"}]


def to_domain(row: BookingRow) -> Booking:
    """A BookingRow as a domain Booking."""
    values = {name: getattr(row, name) for name in _DOMAIN_FIELDS}
    values["alternatives"] = decode_shapes(values["alternatives"])
    return Booking(duration=timedelta(seconds=row.duration_s), state=BookingState(row.state), **values)


def add_booking(booking: Booking, *, session: Session, request_key: str | None = None,
                next_attempt_at: datetime | None = None, quoted: dict | None = None) -> Booking:
    """Insert a new booking (its id is assigned here), with the quote it was booked on (`quoted`, a notice record),
    and return it.

    A second insert with the same `request_key` (a Slack retry racing the first delivery) raises DuplicateRequest.
    """
    values = {name: getattr(booking, name) for name in _DOMAIN_FIELDS if name != "id"}
    values |= {"alternatives": encode_shapes(booking.alternatives),
               "duration_s": int(booking.duration.total_seconds()), "state": booking.state.value,
               "request_key": request_key, "next_attempt_at": next_attempt_at,
               "quoted": json.dumps(quoted, separators=(",", ":"), ensure_ascii=False) if quoted else None}
    if request_key is None:  # nothing to collide with: no savepoint needed
        return replace(booking, id=execute(session, _INSERT, values).inserted_primary_key[0])
    try:
        with session.begin_nested():
            booking_id = execute(session, _INSERT, values).inserted_primary_key[0]
    except IntegrityError:
        raise DuplicateRequest(request_key) from None
    return replace(booking, id=booking_id)


class DuplicateRequest(Exception):
    """A booking for this Slack request already exists."""


def get_booking(booking_id: int, *, session: Session) -> Booking | None:
    """The booking with that id, or None."""
    row = execute(session, _BY_ID, {"booking_id": booking_id}).first()
    return from_columns(row) if row else None


def find_by_request_key(key: str, *, session: Session) -> Booking | None:
    """The booking created by a given Slack request (retries carry the same key)."""
    row = session.exec(select(BookingRow).where(BookingRow.request_key == key)).first()
    return to_domain(row) if row else None


COLUMNS = [_BOOKINGS.c[name] for name in (*_DOMAIN_FIELDS, "duration_s", "state")]
_BY_ID = select(*COLUMNS).where(_BOOKINGS.c.id == bindparam("booking_id"))


def _values(states: Iterable[BookingState]) -> list[str]:
    return [s.value for s in states]


def state_params(states: Iterable[BookingState]) -> dict[str, object]:
    """The parameters of `IN_STATES` (a booking's state is one of them) for `states`."""
    return slot_params("states", {s.value for s in states}, _STATE_SLOTS)


def from_columns(row) -> Booking:
    """The booking a row of `COLUMNS` holds."""
    values = dict(zip(_DOMAIN_FIELDS, row, strict=False))
    values["alternatives"] = decode_shapes(values["alternatives"])
    duration_s, state = row[len(_DOMAIN_FIELDS):]
    return Booking(duration=timedelta(seconds=duration_s), state=BookingState(state), **values)


def list_bookings(*, session: Session, owner: str | None = None, states: Iterable[BookingState] | None = None,
                  due_before: datetime | None = None, ending_by: datetime | None = None,
                  limit: int | None = None, gpus: Iterable[str] | None = None) -> list[Booking]:
    """Bookings filtered by owner, states, GPU type, next-attempt time and end (at or before `ending_by`), oldest
    first."""
    # Plain columns, not ORM objects: every job and every budget check lists the running bookings, and building
    # mapped instances was most of that cost (profile of `gpubot replay`). The statement is built once per shape of
    # filters and run with new values: building it per call cost more than running it.
    gpu_list = sorted(set(gpus)) if gpus is not None else None
    gpu_slots = slots_for(len(gpu_list)) if gpu_list is not None else 0
    query = _listing(bool(owner), states is not None, gpu_slots, due_before is not None,
                     ending_by is not None, bool(limit))
    params: dict[str, object] = {"owner": owner, "due_before": due_before, "ending_by": ending_by, "limit": limit}
    if states is not None:
        params |= state_params(states)
    if gpu_list is not None:
        params |= slot_params("gpus", gpu_list, gpu_slots)
    return [from_columns(row) for row in execute(session, query, params)]


@lru_cache(maxsize=64)
def _listing(owner: bool, states: bool, gpu_slots: int, due_before: bool, ending_by: bool, limit: bool):
    """The statement of `list_bookings` for one shape of filters."""
    query = select(*COLUMNS).order_by(_BOOKINGS.c.id)
    if owner:
        query = query.where(_BOOKINGS.c.owner == bindparam("owner"))
    if states:
        query = query.where(IN_STATES)
    if gpu_slots:
        query = query.where(in_slots(_BOOKINGS.c.gpu, "gpus", gpu_slots))
    if due_before:
        query = query.where(_BOOKINGS.c.next_attempt_at.is_(None)
                            | (_BOOKINGS.c.next_attempt_at <= bindparam("due_before")))
    if ending_by:
        query = query.where(_BOOKINGS.c.ends_at <= bindparam("ending_by"))
    return query.limit(bindparam("limit")) if limit else query


def bookings_where(*conditions, session: Session) -> list[Booking]:
    """The bookings meeting `conditions` (on the bookings table), oldest first: plain columns, no ORM objects."""
    return [from_columns(row) for row in execute(session, select(*COLUMNS).where(*conditions).order_by(
        _BOOKINGS.c.id))]


_CHUNK = 500  # ids per IN (...) list, well under every database's parameter limit


def first_of_each_shape(states: Iterable[BookingState], *, session: Session) -> list[Booking]:
    """The oldest booking in `states` of each distinct wanted shape (GPU, count, spot, CUDA floor and
    alternatives), oldest first.

    The availability round probes each shape the waiting line wants; with 10,000 queued bookings of a few shapes,
    loading them all only to drop the duplicates cost most of the round (bench P4). These columns are every field
    a booking's probes depend on (scheduling.launch_options.booking_requests, scheduling.queue.shape_key).
    """
    t = _BOOKINGS.c
    firsts = select(func.min(t.id)).where(t.state.in_(_values(states))).group_by(
        t.gpu, t.count, t.spot, t.cuda, t.alternatives)
    query = select(*COLUMNS).where(t.id.in_(firsts)).order_by(t.id)
    return [from_columns(row) for row in execute(session, query)]


def bookings_by_id(booking_ids: Iterable[int], *, session: Session) -> dict[int, Booking]:
    """The bookings with these ids (one query per 500), by id; ids with no booking are left out."""
    ids = sorted(set(booking_ids))
    found: dict[int, Booking] = {}
    for start in range(0, len(ids), _CHUNK):
        query = select(*COLUMNS).where(_BOOKINGS.c.id.in_(ids[start:start + _CHUNK]))
        found.update((booking.id, booking) for booking in map(from_columns, execute(session, query)))
    return found


# Statements run once or more per booking are built once: building one (and hashing it for the compiled
# cache) cost several times running it (ORM-built count_gpus_held: 211 µs, prebuilt: 30 µs).
_STATE_SLOTS = len(BookingState)  # every state list fits: see db.core.in_slots
IN_STATES = in_slots(_BOOKINGS.c.state, "states", _STATE_SLOTS)
_GPUS_HELD = select(func.coalesce(func.sum(_BOOKINGS.c.count), 0)).where(
    _BOOKINGS.c.owner == bindparam("owner"), IN_STATES)


def transition(booking_id: int, from_states: Iterable[BookingState], to_state: BookingState, *,
               session: Session, **fields: object) -> bool:
    """Move a booking to `to_state` only if it is in one of `from_states`; True when this call moved it."""
    return update_row(session, _BOOKINGS, "id", booking_id, {"state": to_state.value, **fields},
                      only_if=("state", _values(from_states))) == 1


def transition_returning(booking_id: int, from_states: Iterable[BookingState], to_state: BookingState, *,
                         session: Session, **fields: object) -> Booking | None:
    """`transition`, answering with the booking as it now is (one `UPDATE … RETURNING`, no re-read); None when it
    was in none of `from_states` (nothing changed)."""
    values = {"state": to_state.value, **fields}
    params = {f"set_{column}": value for column, value in values.items()} | {"where_id": booking_id}
    row = execute(session, _transition_returning(tuple(sorted(values))), params | state_params(from_states)).first()
    return from_columns(row) if row is not None else None


@lru_cache(maxsize=64)
def _transition_returning(columns: tuple[str, ...]):
    """`transition_returning`'s statement for one set of columns, built once (building and hashing it per call
    cost more than running it)."""
    return (update(_BOOKINGS).where(_BOOKINGS.c.id == bindparam("where_id"), IN_STATES)
            .values({column: bindparam(f"set_{column}") for column in columns}).returning(*COLUMNS))


def set_fields(booking_id: int, *, session: Session, **fields: object) -> None:
    """Update fields of a booking that do not change its state."""
    update_row(session, _BOOKINGS, "id", booking_id, fields)


def set_message(booking_id: int, channel: str, ts: str, *, session: Session) -> None:
    """Record the Slack message that shows a booking."""
    update_row(session, _BOOKINGS, "id", booking_id, {"channel": channel, "message_ts": ts})


def booking_views(booking_ids: Iterable[int], *, session: Session
                  ) -> dict[int, tuple[Booking, dict | None, Booking | None]]:
    """Each booking of `booking_ids` with the quote it was booked on (a notice record, None when none was kept) and
    the live booking replacing it (None when none is), in one query (one snapshot)."""
    ids = sorted(set(booking_ids))
    if not ids:
        return {}
    rows = execute(session, select(*COLUMNS, _BOOKINGS.c.quoted).where(
        or_(_BOOKINGS.c.id.in_(ids), _BOOKINGS.c.replaces.in_(ids))))
    read = {row.id: (from_columns(row[:-1]), json.loads(row.quoted) if row.quoted else None) for row in rows}
    live = replacements(booking for booking, _quoted in read.values())
    return {booking_id: (*read[booking_id], live.get(booking_id)) for booking_id in ids if booking_id in read}


def count_gpus_held(owner: str, states: Iterable[BookingState], *, session: Session) -> int:
    """GPUs a user holds or waits for in the given states."""
    return int(execute(session, _GPUS_HELD, {"owner": owner, **state_params(states)}).scalar_one())


_ROUNDS = select(_BOOKINGS.c.attempt_rounds).where(_BOOKINGS.c.id == bindparam("booking_id"))


def rounds_of(booking_id: int, *, session: Session) -> int:
    """How many acquisition rounds a booking has been through."""
    return execute(session, _ROUNDS, {"booking_id": booking_id}).scalar() or 0


def leases(*, session: Session) -> dict[int, datetime]:
    """Until when each acquiring booking's current acquisition may run (its lease)."""
    rows = session.exec(select(BookingRow.id, BookingRow.next_attempt_at).where(
        BookingRow.state == BookingState.ACQUIRING.value))
    return {booking_id: until for booking_id, until in rows if until is not None}
