"""Team-pool GPUs are claimed in the database: concurrent launches from two engines never share a GPU."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from functools import partial

from gpubot.domain.errors import NoCapacity
from gpubot.domain.model import Offer
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.pool.adapter import TeamPool
from gpubot.providers.registry import policy_from_dict
from gpubot.scheduling.acquisition.pool import claim_gpus, pool_allocations, release_gpus

from tests.engine_kit import make_engine

POLICY = policy_from_dict({"providers": {"lab": {"kind": "pool", "machines": [
    {"host": "gpu-01", "gpu": "a100", "gpus": 4}, {"host": "gpu-02", "gpu": "a100", "gpus": 2}]}}})


def _pool(database_url, clock) -> TeamPool:
    engine = make_engine(database_url, POLICY, clock, providers={})
    pool = TeamPool("lab", POLICY.providers["lab"], partial(pool_allocations, engine.db, "lab"),
                    claim_gpus(engine.db, engine.now, "lab"), partial(release_gpus, engine.db))
    engine.providers["lab"] = pool
    return pool


def _launch(pool: TeamPool, host: str, i: int) -> str | None:
    offer = Offer("lab", "on-prem", "a100", 1, Decimal(0), "USD", ref=host)
    try:
        return pool.launch(offer, LaunchSpec(i, f"gpubot-{i}-n{i}")).name
    except NoCapacity:
        return None


def test_two_engines_launching_at_once_hand_out_each_gpu_once(database_url, clock):
    pools = [_pool(database_url, clock), _pool(database_url, clock)]  # two replicas of one ledger
    with ThreadPoolExecutor(8) as workers:
        results = list(workers.map(lambda i: _launch(pools[i % 2], ("gpu-01", "gpu-02")[i % 3 == 0], i),
                                   range(24)))
    launched = [name for name in results if name]
    assert len(launched) == 6
    held = pool_allocations_of(pools[0])
    assert sorted(held) == [("gpu-01", 4), ("gpu-02", 2)]


def test_terminate_frees_the_slots_and_a_retried_launch_claims_nothing_more(database_url, clock):
    pool = _pool(database_url, clock)
    name = _launch(pool, "gpu-02", 1)
    assert _launch(pool, "gpu-02", 1) == name  # the same instance name: the claim it holds
    assert _launch(pool, "gpu-02", 2) is not None and _launch(pool, "gpu-02", 3) is None
    pool.terminate(pool.list_owned()[0])
    assert _launch(pool, "gpu-02", 3) is not None


def pool_allocations_of(pool: TeamPool) -> list[tuple[str, int]]:
    """GPUs held per host, from the pool's own listing."""
    per_host: dict[str, int] = {}
    for instance in pool.list_owned():
        per_host[instance.extra["host"]] = per_host.get(instance.extra["host"], 0) + instance.count
    return list(per_host.items())

