"""What a budget check reads: every held booking, in one statement (so one snapshot under the budget lock) — the
placed ones with the end of their last billed stretch, or summed by the ledger when their price is untiered, and
the estimates the waiting ones hold per (owner, project)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from operator import itemgetter

from gpubot.db.bookings import IN_STATES, state_params
from gpubot.db.core import execute, in_slots, slot_params, slots_for
from gpubot.db.seconds import EpochMicroseconds, Greatest, epoch_microseconds
from gpubot.db.tables.billing import UsageIntervalRow
from gpubot.db.tables.bookings import BookingRow
from gpubot.domain.commitment import Held, HeldSeconds
from gpubot.domain.model import BookingState
from sqlalchemy import BigInteger, Numeric, bindparam, case, cast, func, literal, null, union_all
from sqlmodel import Session, select

__all__ = ["held_bookings", "held_for_budget"]

_B, _USAGE = BookingRow.__table__.c, UsageIntervalRow.__table__.c
_BILLED_UNTIL = select(func.max(_USAGE.end)).where(_USAGE.booking_id == _B.id).scalar_subquery()
_BILLED_UNTIL_US = select(EpochMicroseconds(func.max(_USAGE.end))).where(
    _USAGE.booking_id == _B.id).scalar_subquery()  # NULL when nothing is billed yet
_PLACED = _B.price_per_gpu_hour.is_not(None) & _B.started_at.is_not(None) & _B.ends_at.is_not(None)  # Held.placed
_OTHER = _B.id != bindparam("excluding")
_WAITING_COLUMNS = {"id": literal(0), "owner": _B.owner, "project": _B.project, "count": literal(0),
                    "estimate": func.sum(_B.estimate)}  # per (owner, project): what waiting bookings hold
_HELD_FIELDS = list(Held._fields)[:-1]
_PLACED_ROWS = select(*[_B[name] for name in _HELD_FIELDS], _BILLED_UNTIL).where(IN_STATES, _PLACED, _OTHER)
_WAITING_SUMS = (select(*[_WAITING_COLUMNS.get(name, null()) for name in _HELD_FIELDS], null())
                 .where(IN_STATES, ~_PLACED, _OTHER).group_by(_B.owner, _B.project))
# One statement, so one snapshot: read as two (placed, then waiting), a booking whose launch committed between
# them counted in neither, and under READ COMMITTED another replica's booking could slip past the budget.
_HELD = union_all(_PLACED_ROWS, _WAITING_SUMS)
# The two GPU-seconds columns of `_held_for_budget`, in the parts that read rows (typed: PostgreSQL reads an untyped
# NULL in a UNION's first part as text)
_SUMS = (cast(null(), Numeric), cast(null(), Numeric))
_SUMMED_KEYS = ("owner", "project", "provider", "price_per_gpu_hour", "currency")
_summed_keys = itemgetter(*[_HELD_FIELDS.index(name) for name in _SUMMED_KEYS])


@lru_cache(maxsize=8)
def _held_for_budget(tiered_slots: int):
    """`_HELD`, with the placed bookings at untiered prices summed per (owner, project, price) in SQL: their
    GPU-seconds live and left, as domain.commitment's `_seconds` takes them (whole seconds of each, truncated).
    Those at tiered prices (a provider in the `tiered` slots) stay rows: each stretch prices on its own."""
    tiered = in_slots(_B.provider, "tiered", tiered_slots)
    untiered = case((tiered, 0), else_=1) == 1  # NULL when none is tiered: the padding slots never match
    # Each placed booking's moments as epoch microseconds, computed once (materialised: SQLite would otherwise
    # substitute the expressions, and the billed-until subquery, everywhere they are used below)
    placed = select(*[_B[name] for name in (*_SUMMED_KEYS, "count")],
                    EpochMicroseconds(_B.started_at).label("start_us"), _BILLED_UNTIL_US.label("billed_us"),
                    EpochMicroseconds(func.coalesce(_B.released_at, _B.ends_at)).label("end_us")
                    ).where(IN_STATES, _PLACED, _OTHER, untiered).cte("placed").prefix_with("MATERIALIZED")
    p = placed.c

    def whole_seconds(later_us):  # floor, which is truncation for the spans >= 0 that count (the rest are maxed to 0)
        return (later_us - p.start_us) // 1_000_000

    since_us = func.coalesce(bindparam("since_us", type_=BigInteger), p.start_us)
    billed_s = Greatest(literal(0), whole_seconds(func.coalesce(p.billed_us, p.start_us)), whole_seconds(since_us))
    live_end_s = Greatest(billed_s, whole_seconds(bindparam("now_us", type_=BigInteger)))
    end_s = Greatest(literal(0), whole_seconds(p.end_us))
    summed_columns = {"id": literal(0), "count": literal(0)} | {name: p[name] for name in _SUMMED_KEYS}
    summed = select(*[summed_columns.get(name, null()) for name in _HELD_FIELDS], null(),
                    func.sum(p.count * (live_end_s - billed_s)),
                    func.sum(p.count * Greatest(literal(0), end_s - live_end_s))
                    ).group_by(*[p[name] for name in _SUMMED_KEYS])
    return union_all(_PLACED_ROWS.add_columns(*_SUMS).where(tiered), _WAITING_SUMS.add_columns(*_SUMS), summed)


def _held(values) -> Held | None:
    """A row of `_HELD` as a Held: placed, or an estimate held (None for waiting bookings that hold nothing)."""
    held = Held._make(values)
    if held.placed:
        return held
    return held._replace(estimate=Decimal(held.estimate)) if held.estimate is not None else None


def _params(states: Iterable[BookingState], excluding: int | None) -> dict[str, object]:
    return {**state_params(states), "excluding": -1 if excluding is None else excluding}


def held_bookings(states: Iterable[BookingState], *, session: Session, excluding: int | None = None) -> list[Held]:
    """Every booking in `states` but `excluding`, as pricing reads it: each placed one with the end of its last
    billed stretch, and the estimates the others hold summed per (owner, project) in SQL (thousands may be
    queued)."""
    return [held for held in map(_held, execute(session, _HELD, _params(states, excluding))) if held is not None]


def held_for_budget(states: Iterable[BookingState], tiered: Iterable[str], now: datetime,
                    since: datetime | None, *, session: Session, excluding: int | None = None
                    ) -> tuple[list[Held], list[HeldSeconds]]:
    """`held_bookings`, for a budget check at `now` from `since`, in one statement: the placed bookings of the
    `tiered` providers as rows, the waiting ones' estimates per (owner, project), and the others' live and
    remaining GPU-seconds summed per price (a check reads every held booking, and most prices are untiered)."""
    tiered = sorted(set(tiered))
    slots = slots_for(len(tiered))
    params = _params(states, excluding) | slot_params("tiered", tiered, slots) | {
        "now_us": epoch_microseconds(now), "since_us": None if since is None else epoch_microseconds(since)}
    held, summed = [], []
    for row in execute(session, _held_for_budget(slots), params):
        if row[-2] is not None:
            summed.append(HeldSeconds(*_summed_keys(row), int(row[-2]), int(row[-1])))
        elif (one := _held(row[:-2])) is not None:
            held.append(one)
    return held, summed
