"""Telemetry roll-ups: raw samples older than what the idle and health checks read become one row per booking, GPU
and interval (sums, counts, extremes), in the same transaction that deletes them, so a batch is rolled up whole or
not at all and running it again finds nothing left to roll."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gpubot.db.core import execute
from gpubot.db.tables.telemetry import TelemetryRollupRow, TelemetrySampleRow
from sqlalchemy import delete, insert, select, tuple_, update
from sqlmodel import Session

__all__ = ["bucket_of", "prune_rollups", "roll_up", "rollup_readings"]

_S = TelemetrySampleRow.__table__.c
_R = TelemetryRollupRow.__table__
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def bucket_of(at: datetime, interval: timedelta) -> datetime:
    """The start of the interval (counted from the epoch) that holds `at`."""
    return at - (at - _EPOCH) % interval


@dataclass
class _Roll:
    """One roll-up row being made: what earlier runs stored, plus the samples of this batch."""

    first_at: datetime
    last_at: datetime
    samples: int = 0
    util_n: int = 0
    util_sum: float = 0.0
    util_min: float | None = None
    util_max: float | None = None
    temp_max: float | None = None
    mem_n: int = 0
    mem_sum: float = 0.0
    processes_min: int | None = None
    processes_max: int | None = None

    def add(self, util, temp, mem, processes, at: datetime) -> None:
        self.first_at, self.last_at, self.samples = min(self.first_at, at), max(self.last_at, at), self.samples + 1
        if util is not None:
            self.util_n, self.util_sum = self.util_n + 1, self.util_sum + util
            self.util_min = util if self.util_min is None else min(self.util_min, util)
            self.util_max = util if self.util_max is None else max(self.util_max, util)
        if temp is not None:
            self.temp_max = temp if self.temp_max is None else max(self.temp_max, temp)
        if mem is not None:
            self.mem_n, self.mem_sum = self.mem_n + 1, self.mem_sum + mem
        if processes is not None:
            self.processes_min = processes if self.processes_min is None else min(self.processes_min, processes)
            self.processes_max = processes if self.processes_max is None else max(self.processes_max, processes)

    def values(self) -> dict:
        return {name: getattr(self, name) for name in ("first_at", "last_at", "samples", "util_n", "util_sum",
                                                       "util_min", "util_max", "temp_max", "mem_n", "mem_sum",
                                                       "processes_min", "processes_max")}


_STORED = [_R.c[name] for name in ("id", "booking_id", "gpu_index", "bucket", "first_at", "last_at", "samples",
                                   "util_n", "util_sum", "util_min", "util_max", "temp_max", "mem_n", "mem_sum",
                                   "processes_min", "processes_max")]


def roll_up(before: datetime, interval: timedelta, limit: int, *, session: Session,
            after: datetime | None = None) -> int:
    """Roll up to `limit` samples taken before `before` (and from `after` on: older ones are pruned, not rolled),
    oldest first, into their intervals' rows, merged with what is stored, and delete them; how many were rolled
    up. One call is one transaction's work."""
    query = select(_S.id, _S.booking_id, _S.gpu_index, _S.util, _S.temp_c, _S.mem_used_mib, _S.processes, _S.at
                   ).where(_S.at < before)
    if after is not None:
        query = query.where(_S.at >= after)
    rows = execute(session, query.order_by(_S.at).limit(limit)).all()
    if not rows:
        return 0
    keys = {(booking_id, gpu, bucket_of(at, interval)) for _id, booking_id, gpu, *_rest, at in rows}
    stored = {(r.booking_id, r.gpu_index, r.bucket): r for r in _existing(keys, session)}
    rolls: dict[tuple[int, int, datetime], _Roll] = {}
    for _id, booking_id, gpu, util, temp, mem, processes, at in rows:
        key = (booking_id, gpu, bucket_of(at, interval))
        if key not in rolls:
            rolls[key] = _from_stored(stored[key]) if key in stored else _Roll(at, at)
        rolls[key].add(util, temp, mem, processes, at)
    for key, roll in rolls.items():
        if key in stored:
            execute(session, update(_R).where(_R.c.id == stored[key].id).values(**roll.values()))
        else:
            execute(session, insert(_R).values(booking_id=key[0], gpu_index=key[1], bucket=key[2], **roll.values()))
    ids = [row[0] for row in rows]
    for start in range(0, len(ids), 500):
        execute(session, delete(TelemetrySampleRow.__table__).where(_S.id.in_(ids[start:start + 500])))
    return len(rows)


def _existing(keys: Iterable[tuple[int, int, datetime]], session: Session) -> list:
    wanted = sorted(keys)
    found = []
    for start in range(0, len(wanted), 300):
        chunk = wanted[start:start + 300]
        found += execute(session, select(*_STORED).where(
            tuple_(_R.c.booking_id, _R.c.gpu_index, _R.c.bucket).in_(chunk))).all()
    return found


def _from_stored(row) -> _Roll:
    return _Roll(row.first_at, row.last_at, row.samples, row.util_n, row.util_sum, row.util_min, row.util_max,
                 row.temp_max, row.mem_n, row.mem_sum, processes_min=row.processes_min,
                 processes_max=row.processes_max)


def rollup_readings(booking_ids: Sequence[int], since: datetime, until: datetime, *, session: Session
                    ) -> list[tuple[int, int, float | None, datetime]]:
    """(booking id, gpu index, mean util %, at) of the roll-ups of intervals in [since, until): two readings each,
    at its first and its last sample (one when they are the same), so each holds as long as its samples did."""
    if not booking_ids:
        return []
    found = []
    ids = sorted(set(booking_ids))
    for start in range(0, len(ids), 500):
        rows = execute(session, select(_R.c.booking_id, _R.c.gpu_index, _R.c.util_n, _R.c.util_sum, _R.c.first_at,
                                       _R.c.last_at).where(_R.c.booking_id.in_(ids[start:start + 500]),
                                                           _R.c.last_at >= since, _R.c.first_at < until))
        for booking_id, gpu, util_n, util_sum, first_at, last_at in rows:
            util = util_sum / util_n if util_n else None
            found += [(booking_id, gpu, util, at) for at in dict.fromkeys((first_at, last_at)) if since <= at < until]
    return found


def prune_rollups(before: datetime, limit: int, *, session: Session) -> int:
    """Delete up to `limit` roll-ups of intervals that started before `before`, oldest first; how many went."""
    oldest = select(_R.c.id).where(_R.c.bucket < before).order_by(_R.c.bucket).limit(limit)
    return execute(session, delete(_R).where(_R.c.id.in_(oldest))).rowcount
