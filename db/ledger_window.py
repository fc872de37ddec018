"""The usage ledger read over a window, for costs and budgets: its stretches one by one (those added since an id
too), or summed per bucket, price and booking in SQL with the few that cannot be summed there read one by one."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import NamedTuple

from gpubot.db.core import execute
from gpubot.db.tables.billing import UsageIntervalRow
from sqlalchemy import Integer, Interval, bindparam, case, func, literal, literal_column, or_, text, true
from sqlmodel import Session, select

__all__ = [
    "CUSTOM_PLANS",
    "Added",
    "LedgerRow",
    "UsageGroup",
    "edge_rows",
    "forget_reach",
    "ledger_rows",
    "planned_custom",
    "rows_added",
    "usage_groups",
]

_T = UsageIntervalRow.__table__.c


@dataclass(frozen=True)
class LedgerRow:
    """One usage interval as stored, with everything an export needs."""

    id: int
    booking_id: int
    instance_name: str
    owner: str
    project: str | None
    provider: str
    gpu: str
    count: int
    start: datetime
    end: datetime
    price_per_gpu_hour: Decimal
    currency: str
    spot: bool
    note: str | None


def _run(session: Session, query, params: dict | None = None):
    """Run a window query; on PostgreSQL planned with its bounds every time (this transaction only): psycopg
    prepares a statement run five times, and the generic plan PostgreSQL then picks scans ~3× slower (P3)."""
    if session.get_bind().dialect.name == "postgresql" and session.info.get(_CUSTOM_PLANS) is not (
            session.get_transaction()):
        execute(session, text("SET LOCAL plan_cache_mode = force_custom_plan"))
        planned_custom(session)  # SET LOCAL lasts as long as this transaction: once is enough
    return execute(session, query, params)


# SET LOCAL plan_cache_mode = force_custom_plan, as an expression: a statement the transaction runs anyway (the
# budget locks, db.locks) can set it on the way.
CUSTOM_PLANS = "set_config('plan_cache_mode', 'force_custom_plan', true)"
_CUSTOM_PLANS = "gpubot.custom_plans"


def planned_custom(session: Session) -> None:
    """Note that the session's transaction already plans with the bounds (a statement of it ran `CUSTOM_PLANS`)."""
    session.info[_CUSTOM_PLANS] = session.get_transaction()


def _reach(session: Session) -> timedelta:
    """Just over the longest stretch: a stretch overlapping `t` starts after `t - reach`. Read once per
    transaction (the digest's reads run in one and would read it twice)."""
    # `end > since` alone would scan every later stretch; bounding the start below too lets the start index
    # narrow the scan to the window.
    known = session.info.get(_REACH)
    if known is not None and known[0] is session.get_transaction():
        return known[1]
    reach = timedelta(seconds=(execute(session, select(func.max(_T.seconds))).scalar() or 0) + 1)
    session.info[_REACH] = (session.get_transaction(), reach)
    return reach


_REACH = "gpubot.ledger_reach"


def forget_reach(session: Session) -> None:
    """A stretch was written in the session's transaction: the longest may have grown, so read it again."""
    session.info.pop(_REACH, None)


def _overlapping(query, since: datetime | None, until: datetime | None, session: Session):
    if since is not None:
        query = query.where(_T.end > since, _T.start >= since - _reach(session))
    if until is not None:
        query = query.where(_T.start < until)
    return query


def ledger_rows(*, session: Session, since: datetime | None = None, until: datetime | None = None,
                after_id: int | None = None) -> list[LedgerRow]:
    """Usage intervals overlapping [since, until) (all when unbounded), in time order; only those with an id
    above `after_id` when given (the ledger is append-only, so these are the ones added since)."""
    # Plain columns, not ORM objects: building mapped instances was most of the cost of every report
    # (see bench/p3_ledger.py).
    if after_id is None:
        return _rows(_run(session, _overlapping(_row_select(), since, until, session)))
    # The rows added since `after_id` are few and the id range finds them: no need to bound the window's start.
    # Ordered by id in SQL and by time here: ORDER BY start made SQLite walk the start index over every stretch
    # that began before `until`, the whole ledger, on every budget check.
    query = _added_after(since is not None, until is not None)
    params = {"after_id": after_id, "since": since, "until": until}
    return sorted(_rows(_run(session, query, params)), key=lambda r: (r.start, r.id))


@lru_cache(maxsize=4)
def _added_after(since: bool, until: bool):
    """`ledger_rows`' query of the rows added after an id, built once per bound given (every budget check runs
    it: building it each time cost a third of running it)."""
    query = _row_select(ordered=False).where(_T.id > bindparam("after_id")).order_by(_T.id)
    if since:
        query = query.where(_T.end > bindparam("since"))
    if until:
        query = query.where(_T.start < bindparam("until"))
    return query


class Added(NamedTuple):
    """`rows_added`'s answer: the stretches added after an id, and how many of the window's were there already."""

    rows: list[LedgerRow]
    settled: int | None


def rows_added(*, session: Session, since: datetime, until: datetime, after_id: int) -> Added:
    """The stretches overlapping [since, until) with an id above `after_id`, in time order, and how many of the
    window's have an id of at most `after_id`: PostgreSQL's sequences can commit out of order, so an id below the
    last one read may have appeared since. Counted in the same statement, so in the same snapshot as the rows
    (nothing can commit between the two); None on SQLite, where one writer at a time (BEGIN IMMEDIATE) makes ids
    visible in order."""
    if session.get_bind().dialect.name != "postgresql":
        return Added(ledger_rows(session=session, since=since, until=until, after_id=after_id), None)
    # One row per stretch added, each carrying the count; one row of the count alone (outer join) when none was.
    result = _run(session, _counted_after(), {"after_id": after_id, "since": since, "until": until}).all()
    rows = sorted(_rows(row[1:] for row in result if row[1] is not None), key=lambda r: (r.start, r.id))
    return Added(rows, int(result[0][0]))


@lru_cache(maxsize=1)
def _counted_after():
    """`rows_added`' statement on PostgreSQL, built once."""
    since = bindparam("since", type_=_T.start.type)
    # `start >= since - reach` as in `_overlapping`, the longest stretch read in the statement itself.
    reach = select(func.coalesce(func.max(_T.seconds), 0) + 1).scalar_subquery()
    settled = (select(func.count().label("settled")).select_from(UsageIntervalRow)
               .where(_T.id <= bindparam("after_id"), _T.end > since,
                      _T.start >= since - reach * literal_column("interval '1 second'", Interval()),
                      _T.start < bindparam("until")).subquery("settled"))
    added = (_row_select(ordered=False).where(_T.id > bindparam("after_id"), _T.end > since,
                                              _T.start < bindparam("until")).subquery("added"))
    return select(settled.c.settled, *added.c).select_from(settled.outerjoin(added, true())).order_by(added.c.id)


class UsageGroup(NamedTuple):
    """Usage intervals at one price inside one bucket — of one booking, unless totals were asked for — summed:
    seconds, seconds beyond each asked threshold of continuous use, and how many rows, up to which id."""

    bucket: int
    provider: str
    count: int
    price_per_gpu_hour: Decimal
    currency: str
    seconds: int
    beyond: dict[int, int]
    rows: int
    last_id: int
    booking_id: int = 0
    owner: str = ""
    project: str | None = None
    gpu: str = ""


_PRICE_KEYS = (_T.provider, _T.count, _T.price_per_gpu_hour, _T.currency)
_BOOKING_KEYS = (_T.booking_id, _T.owner, _T.project, _T.gpu)


def usage_groups(*, session: Session, bounds: Sequence[datetime], exclude: Iterable[str] = (),
                 thresholds: Sequence[int] = (), per_booking: bool = True) -> list[UsageGroup]:
    """Intervals lying wholly inside one bucket [bounds[i], bounds[i + 1]), summed per bucket, price and (unless
    `per_booking` is False) booking in SQL — exact: stored whole seconds and offsets — leaving out those
    `edge_rows` returns (the providers in `exclude`, rows of unknown offset). `beyond[T]` sums the seconds past T
    into continuous use."""
    thresholds = tuple(thresholds)
    query = _groups_query(len(bounds), thresholds, tuple(sorted(exclude)), per_booking)
    k, n = len(_PRICE_KEYS) + (len(_BOOKING_KEYS) if per_booking else 0) + 1, len(thresholds)
    return [UsageGroup(int(r[0]), r[1], r[2], Decimal(r[3]), r[4], int(r[k]),
                       dict(zip(thresholds, map(int, r[k + 1:k + 1 + n]), strict=True)), int(r[k + 1 + n]),
                       int(r[k + 2 + n]), *r[5:k]) for r in _run(session, query, _bound_params(bounds))]


def _bound_params(bounds: Sequence[datetime], reach: timedelta | None = None) -> dict[str, datetime]:
    """The values of `_bounds` (and, with `reach`, of the lower ends of the starts that may cross each)."""
    params = {f"b{i}": bound for i, bound in enumerate(bounds)}
    return params | ({f"lo{i}": bound - reach for i, bound in enumerate(bounds)} if reach is not None else {})


def _bounds(count: int, name: str = "b") -> list:
    return [bindparam(f"{name}{i}", type_=_T.start.type) for i in range(count)]


@lru_cache(maxsize=64)
def _groups_query(count: int, thresholds: tuple[int, ...], exclude: tuple[str, ...], per_booking: bool):
    """`usage_groups`' statement for `count` bounds (as parameters b0…), built once per shape: building it and its
    cache key each time cost more than a third of running it (the digest's 14 bounds, P3)."""
    bounds = _bounds(count)
    inner = bounds[1:-1]
    bucket = _by_start(inner, [literal(i, Integer()) for i in range(count - 1)])
    keys = _PRICE_KEYS + (_BOOKING_KEYS if per_booking else ())
    query = (select(bucket, *keys, func.sum(_T.seconds), *(_beyond(at) for at in thresholds), func.count(),
                    func.max(_T.id))
             .where(_T.start >= bounds[0], _T.start < bounds[-1], _T.offset_s.is_not(None),
                    _T.end <= _by_start(inner, bounds[1:]))  # ends in the bucket it starts in
             .group_by(*([bucket] if inner else []), *keys))
    return query.where(_T.provider.not_in(exclude)) if exclude else query


def _by_start(inner: Sequence, values: Sequence):
    """SQL: the value of the bucket a row starts in (one comparison per bound passed, as a CASE)."""
    if not inner:
        return values[0]
    return case(*((_T.start < b, v) for b, v in zip(inner, values, strict=False)), else_=values[-1])


def _beyond(threshold: int):
    """The SQL sum of seconds past `threshold` into continuous use (domain.pricing.seconds_beyond per row)."""
    end = _T.offset_s + _T.seconds
    return func.sum(case((end > threshold, end - case((_T.offset_s > threshold, _T.offset_s), else_=threshold)),
                         else_=0))


def edge_rows(*, session: Session, bounds: Sequence[datetime], include: Iterable[str] = ()) -> list[LedgerRow]:
    """Intervals overlapping [bounds[0], bounds[-1]) that `usage_groups` leaves out: those crossing a bound,
    those of unknown offset, and every interval of the providers in `include`."""
    query = _edges_query(len(bounds), tuple(sorted(include)))
    rows = _rows(_run(session, query, _bound_params(bounds, _reach(session))))
    # Sorted here: ORDER BY makes SQLite walk the start index from end to end instead of reading each range.
    return sorted(rows, key=lambda r: (r.start, r.id))


@lru_cache(maxsize=64)
def _edges_query(count: int, include: tuple[str, ...]):
    """`edge_rows`' statement for `count` bounds (parameters b0…, and lo0… each bound less the reach), built once
    per shape."""
    bounds, lows = _bounds(count), _bounds(count, "lo")
    # Each term is a range of the start index (offsets are rarely unknown: a partial index finds those), so only
    # the stretches near each bound are read, not the whole window.
    crossing = [(_T.start >= lo) & (_T.start < b) & (_T.end > b) for lo, b in zip(lows, bounds, strict=True)]
    loose = [_T.offset_s.is_(None), *([_T.provider.in_(include)] if include else [])]
    inside = (_T.start >= bounds[0]) & (_T.start < bounds[-1])
    return _row_select(ordered=False).where(or_(*crossing, inside & or_(*loose)))


def _row_select(ordered: bool = True):
    query = select(_T.id, _T.booking_id, _T.instance_name, _T.owner, _T.project, _T.provider, _T.gpu, _T.count,
                   _T.start, _T.end, _T.price_per_gpu_hour, _T.currency, _T.spot, _T.note)
    return query.order_by(_T.start, _T.id) if ordered else query


def _rows(result) -> list[LedgerRow]:
    return [LedgerRow(*r[:10], Decimal(r[10]), *r[11:]) for r in result]
