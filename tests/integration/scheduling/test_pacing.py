"""Lambda's pace kept by replicas together: turns booked in the shared database (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from statistics import median

import pytest
from gpubot.db.database import Database
from gpubot.domain.model import Offer, instance_tag
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.lambda_cloud.adapter import LambdaCloud
from gpubot.providers.lambda_cloud.config import LambdaConfig
from gpubot.scheduling.acquisition.pacing import SharedPacer

from tests.engine_kit import migrated
from tests.fakes.lambda_api import FakeLambda

KEY = "lambda-pace-key"


@pytest.fixture
def replicas(database_url: str) -> Iterator[tuple[Database, Database]]:
    """Two replicas' handles (each its own engine and connection pool) on one migrated database."""
    first, second = migrated(database_url), Database(database_url)
    yield first, second
    first.dispose()
    second.dispose()


def test_two_replicas_never_book_the_same_turn(replicas: tuple[Database, Database]) -> None:
    booked: list[float] = []
    lock = threading.Lock()

    def record(wait: float) -> None:
        with lock:
            booked.append(1000.0 + wait)

    pacers = [SharedPacer(db, clock=lambda: 1000.0, sleep=record) for db in replicas]  # time stands still
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: pacers[i % 2].wait_turn(("lambda:lambda", 1.0)), range(20)))
    assert sorted(booked) == [1000.0 + turn for turn in range(1, 20)]  # turn 0 went at once, no sleep


def test_a_launch_turn_keeps_both_gates(replicas: tuple[Database, Database]) -> None:
    sleeps: list[float] = []
    first, second = (SharedPacer(db, clock=lambda: 50.0, sleep=sleeps.append) for db in replicas)
    first.wait_turn(("lambda:lambda", 1.0), ("lambda:lambda:launch", 12.0))
    second.wait_turn(("lambda:lambda", 1.0))
    second.wait_turn(("lambda:lambda", 1.0), ("lambda:lambda:launch", 12.0))
    assert sleeps == [1.0, 12.0]


@pytest.fixture
def lambda_fake() -> Iterator[FakeLambda]:
    fake = FakeLambda(KEY, launch_window=0.8, request_window=0.25)  # refuses what comes < 0.25 s after the last
    fake.start()
    yield fake
    fake.stop()


def test_two_adapters_on_one_database_keep_lambdas_pace(replicas: tuple[Database, Database],
                                                        lambda_fake: FakeLambda) -> None:
    """Real time: two adapters, each with its own replica's pacer, call Lambda at once from two threads."""
    adapters = [LambdaCloud("lambda", LambdaConfig(), KEY, f"{lambda_fake.url}/api/v1",
                            pacer=SharedPacer(db), request_interval=0.5, launch_interval=1.0) for db in replicas]
    offer = Offer("lambda", "us-west-1", "a10", 1, 0, "USD", ref="gpu_1x_a10")

    def busy(index: int) -> None:
        adapter = adapters[index]
        launched = adapter.launch(offer, LaunchSpec(index, instance_tag(index, "p")))
        for _ in range(2):
            adapter.describe(launched)
        adapter.launch(offer, LaunchSpec(10 + index, instance_tag(10 + index, "p")))

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(busy, range(2)))
    arrivals = sorted(r.at for r in lambda_fake.requests)
    launches = sorted(r.at for r in lambda_fake.requests if r.path.endswith("/launch"))
    gaps = [b - a for a, b in pairwise(arrivals)]
    launch_gaps = [b - a for a, b in pairwise(launches)]
    assert len(arrivals) == 8 and len(lambda_fake.runs) == 4, "a 429 was retried: the pace was broken"
    assert min(gaps) > 0.25 and median(gaps) >= 0.45  # turns 0.5 s apart; a late wake-up shortens the next gap
    assert min(launch_gaps) > 0.8
