"""The replay's lower bound: the cheapest cost of doing every job's work within every capacity limit over time.

A linear program on time buckets (scipy's HiGHS). Each job may run from its submission to its deadline, at most
its GPU count at a time, on any stock that sells its GPU type (on demand, or spot when the job may use spot); each
stock holds at most its GPU count at a time, spot and on-demand machines drawing on the same GPUs. Work is fluid:
a job may pause, split its GPUs across stocks and move between them, so the program is a relaxation of every real
schedule and its optimum is a lower bound on the cost of any policy that did the same work by the same deadlines.

Two formulations:
- exact (per job): a variable per job, bucket and stock; used while there are at most `EXACT_LIMIT` of them.
- aggregated: jobs of the same GPU type and spot permission are pooled into one class; the class may have done,
  by the end of each bucket, at most what its jobs could have done running from submission at full rate, at least
  what they must have done to meet their deadlines, and in each bucket at most their GPUs there could do. These
  are necessary conditions of the exact program, so its optimum is lower still (a weaker bound), but its size
  grows with buckets × classes, not with jobs.

Pure: plain data in, a number out. scipy is imported when a bound is solved (the optional extra `replay`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

__all__ = ["EXACT_LIMIT", "BoundJob", "BoundStock", "LowerBound", "solve_bound"]

EXACT_LIMIT = 200_000  # variables of the per-job program beyond which the aggregated one is solved
_HOUR = 3600.0


@dataclass(frozen=True)
class BoundStock:
    """GPUs of one type in one place (a cloud's region, or the team pool): how many, and their price per GPU-hour
    in team currency on demand and on spot (None: not sold on spot). A pool's price is 0: its fees are fixed."""

    name: str
    gpu: str
    count: int
    price: Decimal
    spot_price: Decimal | None = None


@dataclass(frozen=True)
class BoundJob:
    """Work to do: `work_s` seconds of `gpus` GPUs of `gpu_type`, not before `submit_s`, done by `deadline_s`."""

    submit_s: int
    gpus: int
    gpu_type: str
    work_s: int
    deadline_s: int
    spot_ok: bool = False

    @property
    def end_s(self) -> int:
        """The deadline, but never before the work could be done at full rate from submission."""
        return max(self.deadline_s, self.submit_s + self.work_s)


@dataclass(frozen=True)
class LowerBound:
    """The optimum of the program (team currency, usage only), how it was solved and its size."""

    cost: Decimal
    method: str  # "exact" or "aggregated"
    buckets: int
    bucket_s: int
    variables: int
    jobs: int


def _options(job: BoundJob, stocks: Sequence[BoundStock]) -> list[tuple[int, float]]:
    """(stock index, price per GPU-hour) of every way to run the job's GPUs."""
    found = [(i, float(s.price)) for i, s in enumerate(stocks) if s.gpu == job.gpu_type and s.count > 0]
    if job.spot_ok:
        found += [(i, float(s.spot_price)) for i, s in enumerate(stocks)
                  if s.gpu == job.gpu_type and s.count > 0 and s.spot_price is not None]
    return found


def _merged(stocks: Sequence[BoundStock]) -> list[BoundStock]:
    """Stocks of the same GPU type and prices pooled into one of their summed count (the pool's machines of a type).
    Work is fluid across stocks, so the optimum is the same; identical free columns only slowed the solver down
    (the Philly pool world, four 8-GPU machines apart: no optimum in 15 minutes)."""
    pooled: dict[tuple[str, Decimal, Decimal | None], BoundStock] = {}
    for stock in stocks:
        key = (stock.gpu, stock.price, stock.spot_price)
        seen = pooled.get(key)
        pooled[key] = stock if seen is None else BoundStock(seen.name, seen.gpu, seen.count + stock.count,
                                                            seen.price, seen.spot_price)
    return list(pooled.values())


def _overlap(start: float, end: float, lo: float, hi: float) -> float:
    return max(0.0, min(end, hi) - max(start, lo))


def solve_bound(jobs: Sequence[BoundJob], stocks: Sequence[BoundStock], bucket_s: int = 3600,
                exact_limit: int = EXACT_LIMIT) -> LowerBound | None:
    """The lower bound of doing `jobs` on `stocks`, or None when no schedule fits (capacity too small for the
    deadlines). A job that no stock sells cannot have run: the caller leaves it out."""
    live = [j for j in jobs if j.work_s > 0 and j.gpus > 0]
    if not live:
        return LowerBound(Decimal(0), "exact", 0, bucket_s, 0, 0)
    if any(not _options(j, stocks) for j in live):
        raise ValueError("a job asks for a GPU type no stock sells")
    stocks = _merged(stocks)
    buckets = math.ceil(max(j.end_s for j in live) / bucket_s)
    size = sum(len(_options(j, stocks)) * (math.ceil(j.end_s / bucket_s) - j.submit_s // bucket_s) for j in live)
    solve = _exact if size <= exact_limit else _aggregated
    solved = solve(live, stocks, bucket_s, buckets)
    if solved is None:
        return None
    cost, variables = solved
    return LowerBound(Decimal(repr(cost)).quantize(Decimal("0.01")), solve.__name__.strip("_"), buckets, bucket_s,
                      variables, len(live))


class _Program:
    """A sparse linear program built row by row: minimise c·x, A_ub x ≤ b_ub, A_eq x = b_eq, bounds."""

    def __init__(self) -> None:
        self.cost: list[float] = []
        self.upper: list[float | None] = []
        self.lower: list[float] = []
        self.ub: tuple[list[int], list[int], list[float], list[float]] = ([], [], [], [])
        self.eq: tuple[list[int], list[int], list[float], list[float]] = ([], [], [], [])

    def var(self, cost: float, upper: float | None = None, lower: float = 0.0) -> int:
        self.cost.append(cost)
        self.upper.append(upper)
        self.lower.append(lower)
        return len(self.cost) - 1

    @staticmethod
    def _row(rows, terms: Sequence[tuple[int, float]], rhs: float) -> None:
        index = len(rows[3])
        for column, value in terms:
            rows[0].append(index)
            rows[1].append(column)
            rows[2].append(value)
        rows[3].append(rhs)

    def at_most(self, terms: Sequence[tuple[int, float]], rhs: float) -> None:
        self._row(self.ub, terms, rhs)

    def equal(self, terms: Sequence[tuple[int, float]], rhs: float) -> None:
        self._row(self.eq, terms, rhs)

    def solve(self) -> float | None:
        from scipy.optimize import linprog
        from scipy.sparse import csr_array

        n = len(self.cost)

        def matrix(rows):
            return (csr_array((rows[2], (rows[0], rows[1])), shape=(len(rows[3]), n)), rows[3]) if rows[3] \
                else (None, None)

        a_ub, b_ub = matrix(self.ub)
        a_eq, b_eq = matrix(self.eq)
        result = linprog(self.cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq,
                         bounds=list(zip(self.lower, self.upper, strict=True)), method="highs")
        return float(result.fun) if result.status == 0 else None


def _capacity_rows(program: _Program, on_stock: dict[tuple[int, int], list[int]], stocks: Sequence[BoundStock],
                   bucket_s: int) -> None:
    for (stock, _bucket), columns in on_stock.items():
        program.at_most([(c, 1.0) for c in columns], stocks[stock].count * bucket_s / _HOUR)


def _exact(jobs: Sequence[BoundJob], stocks: Sequence[BoundStock], bucket_s: int, _buckets: int
           ) -> tuple[float, int] | None:
    """One variable per job, bucket and way to run it (GPU-hours)."""
    program = _Program()
    on_stock: dict[tuple[int, int], list[int]] = defaultdict(list)
    for job in jobs:
        options, everything = _options(job, stocks), []
        for bucket in range(job.submit_s // bucket_s, math.ceil(job.end_s / bucket_s)):
            room = job.gpus * _overlap(job.submit_s, job.end_s, bucket * bucket_s, (bucket + 1) * bucket_s) / _HOUR
            if room <= 0:
                continue
            here = [program.var(price, room) for _stock, price in options]
            for (stock, _price), column in zip(options, here, strict=True):
                on_stock[(stock, bucket)].append(column)
            program.at_most([(c, 1.0) for c in here], room)
            everything += here
        program.equal([(c, 1.0) for c in everything], job.gpus * job.work_s / _HOUR)
    _capacity_rows(program, on_stock, stocks, bucket_s)
    cost = program.solve()
    return None if cost is None else (cost, len(program.cost))


def _aggregated(jobs: Sequence[BoundJob], stocks: Sequence[BoundStock], bucket_s: int, buckets: int
                ) -> tuple[float, int] | None:
    """Jobs pooled by (GPU type, spot permission): cumulative work between what was possible and what was due."""
    import numpy as np

    classes: dict[tuple[str, bool], list[BoundJob]] = defaultdict(list)
    for job in jobs:
        classes[(job.gpu_type, job.spot_ok)].append(job)
    program = _Program()
    on_stock: dict[tuple[int, int], list[int]] = defaultdict(list)
    for members in classes.values():
        options = _options(members[0], stocks)
        submit = np.array([j.submit_s for j in members], dtype=float)
        end = np.array([j.end_s for j in members], dtype=float)
        gpus = np.array([j.gpus for j in members], dtype=float)
        work = np.array([j.gpus * j.work_s for j in members], dtype=float)  # GPU-seconds
        first, last = int(submit.min()) // bucket_s, math.ceil(end.max() / bucket_s)
        previous = None
        for bucket in range(first, last):
            lo, hi = bucket * bucket_s, (bucket + 1) * bucket_s
            rate = float((gpus * np.clip(np.minimum(end, hi) - np.maximum(submit, lo), 0, None)).sum()) / _HOUR
            possible = float(np.minimum(work, gpus * np.clip(hi - submit, 0, None)).sum()) / _HOUR
            due = float(np.clip(work - gpus * np.clip(end - hi, 0, None), 0, None).sum()) / _HOUR
            here = [program.var(price, rate) for _stock, price in options] if rate > 0 else []
            for (stock, _price), column in zip(options if here else [], here, strict=True):
                on_stock[(stock, bucket)].append(column)
            if here:
                program.at_most([(c, 1.0) for c in here], rate)
            done = program.var(0.0, possible, min(due, possible))
            program.equal([(done, 1.0), *((c, -1.0) for c in here), *([(previous, -1.0)] if previous is not None
                                                                      else [])], 0.0)
            previous = done
    _capacity_rows(program, on_stock, stocks, bucket_s)
    cost = program.solve()
    return None if cost is None else (cost, len(program.cost))
