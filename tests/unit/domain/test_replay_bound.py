"""The replay's lower bound against brute force on small traces: every whole-bucket schedule tried."""

from __future__ import annotations

import itertools
import random
from decimal import Decimal

import pytest

pytest.importorskip("scipy")

from gpubot.domain.replay_bound import BoundJob, BoundStock, solve_bound

H = 3600


def brute_force(jobs: list[BoundJob], stocks: list[BoundStock], step: int = H) -> Decimal | None:
    """The cheapest schedule where each job, in each `step` of its window, runs all its GPUs on one stock (on demand
    or spot) or pauses, and runs its work's number of steps; None when nothing fits."""
    def ways(job: BoundJob):
        options = [None] + [(i, s.price) for i, s in enumerate(stocks) if s.gpu == job.gpu_type] + \
                  ([(i, s.spot_price) for i, s in enumerate(stocks) if s.gpu == job.gpu_type and s.spot_price
                    is not None] if job.spot_ok else [])
        hours = range(job.submit_s // step, job.deadline_s // step)
        for plan in itertools.product(options, repeat=len(hours)):
            if sum(p is not None for p in plan) == job.work_s // step:
                yield {hour: p for hour, p in zip(hours, plan, strict=True) if p is not None}

    best = None
    for plans in itertools.product(*(list(ways(j)) for j in jobs)):
        used: dict[tuple[int, int], int] = {}
        for job, plan in zip(jobs, plans, strict=True):
            for hour, (stock, _price) in plan.items():
                used[(stock, hour)] = used.get((stock, hour), 0) + job.gpus
        if any(n > stocks[stock].count for (stock, _hour), n in used.items()):
            continue
        cost = sum((price * job.gpus * step / H for job, plan in zip(jobs, plans, strict=True)
                    for _stock, price in plan.values()), Decimal(0))
        best = cost if best is None or cost < best else best
    return best


def _stocks(rng: random.Random) -> list[BoundStock]:
    return [BoundStock("pool", "v100", rng.randint(1, 2), Decimal(0)),
            BoundStock("east", "v100", rng.randint(1, 3), Decimal("2.50")),
            BoundStock("spotty", "v100", rng.randint(1, 2), Decimal("1.80"), Decimal("0.70")),
            BoundStock("east", "a100", 2, Decimal("3.40"))]


def _jobs(rng: random.Random, gpus: tuple[int, ...]) -> list[BoundJob]:
    jobs = []
    for _ in range(rng.randint(1, 3)):
        submit, work = rng.randint(0, 2), rng.randint(1, 2)
        jobs.append(BoundJob(submit * H, rng.choice(gpus), rng.choice(["v100", "v100", "a100"]), work * H,
                             (submit + work + rng.randint(0, 1)) * H, spot_ok=rng.random() < 0.5))
    return jobs


@pytest.mark.parametrize("seed", range(25))
def test_single_gpu_jobs_bound_equals_brute_force(seed):
    """With one GPU per job the program is a flow problem, so its optimum is a whole-bucket schedule's."""
    rng = random.Random(seed)
    stocks, jobs = _stocks(rng), _jobs(rng, (1,))
    expected = brute_force(jobs, stocks)
    bound = solve_bound(jobs, stocks)
    if expected is None:
        assert bound is None
    else:
        assert bound is not None and bound.method == "exact"
        assert bound.cost == expected


@pytest.mark.parametrize("seed", range(25))
def test_multi_gpu_bound_never_exceeds_brute_force(seed):
    """Jobs of several GPUs may split across stocks in the program: the bound is at most the best schedule."""
    rng = random.Random(1000 + seed)
    stocks, jobs = _stocks(rng), _jobs(rng, (1, 2))
    expected = brute_force(jobs, stocks)
    bound = solve_bound(jobs, stocks)
    if expected is not None:
        assert bound is not None and bound.cost <= expected


@pytest.mark.parametrize("seed", range(25))
def test_aggregated_bound_never_exceeds_exact(seed):
    """The aggregated program keeps only necessary conditions of the exact one: a weaker bound, never above."""
    rng = random.Random(2000 + seed)
    stocks, jobs = _stocks(rng), _jobs(rng, (1, 2))
    exact = solve_bound(jobs, stocks)
    aggregated = solve_bound(jobs, stocks, exact_limit=0)
    if exact is not None:
        assert aggregated is not None and aggregated.method == "aggregated"
        assert aggregated.cost <= exact.cost


def test_the_pool_counts_once_however_many_jobs_want_it():
    """Three jobs at once and a pool of one GPU: one runs free, two pay the cloud (the old bound priced all three
    at the pool's zero)."""
    stocks = [BoundStock("pool", "v100", 1, Decimal(0)), BoundStock("east", "v100", 8, Decimal("2.00"))]
    jobs = [BoundJob(0, 1, "v100", 2 * H, 2 * H) for _ in range(3)]
    for limit in (0, 10_000):
        bound = solve_bound(jobs, stocks, exact_limit=limit)
        assert bound is not None and bound.cost == Decimal("8.00")


def test_waiting_for_the_pool_within_the_deadline_is_free():
    stocks = [BoundStock("pool", "v100", 1, Decimal(0)), BoundStock("east", "v100", 8, Decimal("2.00"))]
    jobs = [BoundJob(0, 1, "v100", H, 2 * H), BoundJob(0, 1, "v100", H, 2 * H)]
    assert solve_bound(jobs, stocks).cost == Decimal(0)


def test_no_schedule_fits_is_no_bound():
    stocks = [BoundStock("east", "v100", 1, Decimal("2.00"))]
    jobs = [BoundJob(0, 2, "v100", H, H)]
    assert solve_bound(jobs, stocks) is None


def test_a_type_nothing_sells_is_refused():
    with pytest.raises(ValueError, match="no stock sells"):
        solve_bound([BoundJob(0, 1, "h100", H, H)], [BoundStock("east", "v100", 1, Decimal(1))])


def test_no_work_costs_nothing():
    assert solve_bound([], []).cost == Decimal(0)


@pytest.mark.parametrize("seed", range(25))
def test_machines_of_one_type_and_price_bound_as_their_sum_and_as_brute_force(seed):
    """The pool's machines are pooled into one stock before solving: the same optimum as each apart (brute force
    tries every machine), exact and aggregated."""
    rng = random.Random(3000 + seed)
    apart = [BoundStock("pool-1", "v100", 1, Decimal(0)), BoundStock("pool-2", "v100", rng.randint(1, 2),
                                                                      Decimal(0)),
             BoundStock("east", "v100", rng.randint(1, 2), Decimal("2.50")), BoundStock("east", "a100", 2,
                                                                                        Decimal("3.40"))]
    summed = [BoundStock("pool", "v100", apart[0].count + apart[1].count, Decimal("0.00")), *apart[2:]]
    jobs = _jobs(rng, (1,))
    expected = brute_force(jobs, apart)
    for limit in (0, 10_000):
        bound, whole = solve_bound(jobs, apart, exact_limit=limit), solve_bound(jobs, summed, exact_limit=limit)
        assert (bound is None) == (whole is None) == (expected is None)
        if bound is not None:
            assert bound.cost == whole.cost and bound.variables == whole.variables
            assert bound.cost <= expected and (limit == 0 or bound.cost == expected)


def test_stocks_of_one_type_at_other_prices_stay_apart():
    """Two clouds' GPUs of one type at different prices are not pooled: the cheap one's capacity still binds."""
    stocks = [BoundStock("west", "v100", 1, Decimal("1.00")), BoundStock("east", "v100", 1, Decimal("2.00"))]
    jobs = [BoundJob(0, 1, "v100", H, H), BoundJob(0, 1, "v100", H, H)]
    assert solve_bound(jobs, stocks).cost == Decimal("3.00")


Q = H // 4  # a quarter-hour


def _quarter_jobs(rng: random.Random, gpus: tuple[int, ...]) -> list[BoundJob]:
    """Jobs submitted, running and due on quarter-hours, so that some share an hour without overlapping in time."""
    jobs = []
    for _ in range(rng.randint(1, 3)):
        submit, work = rng.randint(0, 4), rng.randint(1, 2)
        jobs.append(BoundJob(submit * Q, rng.choice(gpus), rng.choice(["v100", "v100", "a100"]), work * Q,
                             (submit + work + rng.randint(0, 1)) * Q, spot_ok=rng.random() < 0.5))
    return jobs


@pytest.mark.parametrize("seed", range(25))
def test_quarter_hour_buckets_bound_single_gpu_jobs_exactly_and_never_below_hour_buckets(seed):
    """On quarter-hour work, quarter-hour buckets give the best quarter-hour schedule (brute force); hour buckets
    let work of one hour overlap in time and may be lower, never higher: both bounds, the finer one tighter."""
    rng = random.Random(4000 + seed)
    stocks, jobs = _stocks(rng), _quarter_jobs(rng, (1,))
    expected = brute_force(jobs, stocks, step=Q)
    fine, coarse = solve_bound(jobs, stocks, bucket_s=Q), solve_bound(jobs, stocks)
    if expected is None:
        assert fine is None
        return
    assert fine is not None and fine.cost == expected
    assert coarse is not None and coarse.cost <= fine.cost


@pytest.mark.parametrize("seed", range(25))
def test_quarter_hour_buckets_never_exceed_brute_force_and_the_aggregated_never_exceeds_the_exact(seed):
    rng = random.Random(5000 + seed)
    stocks, jobs = _stocks(rng), _quarter_jobs(rng, (1, 2))
    expected = brute_force(jobs, stocks, step=Q)
    exact = solve_bound(jobs, stocks, bucket_s=Q)
    aggregated = solve_bound(jobs, stocks, bucket_s=Q, exact_limit=0)
    if expected is not None:
        assert exact is not None and exact.cost <= expected
    if exact is not None:
        assert aggregated is not None and aggregated.cost <= exact.cost
        assert aggregated.cost >= solve_bound(jobs, stocks, exact_limit=0).cost  # finer, never weaker


def test_two_jobs_in_the_same_half_hour_cannot_share_one_gpu_however_the_hour_is_cut():
    """Both run 0–30 min: the hour bucket lets the one cheap GPU do both (a full GPU-hour in that hour), the
    quarter-hour buckets see that it can do only one at a time."""
    stocks = [BoundStock("west", "v100", 1, Decimal("1.00")), BoundStock("east", "v100", 2, Decimal("2.00"))]
    jobs = [BoundJob(0, 1, "v100", 2 * Q, 2 * Q), BoundJob(0, 1, "v100", 2 * Q, 2 * Q)]
    assert solve_bound(jobs, stocks).cost == Decimal("1.00")
    for limit in (0, 10_000):
        assert solve_bound(jobs, stocks, bucket_s=Q, exact_limit=limit).cost == Decimal("1.50")
    assert brute_force(jobs, stocks, step=Q) == Decimal("1.50")
