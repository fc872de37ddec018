"""P2: time to acquire when the first K = 3 providers cannot place the booking and every provider API call
takes the same latency. Two ways of being out: the probe already says so ("sold out"), or the probe says
available and the launch refuses ("refused"). The floor is one successful provider round-trip (a launch
alone); a naive sequential failover (probe one cloud, launch, next) is reported beside it."""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from gpubot.domain.errors import NoCapacity, ProviderError
from gpubot.domain.model import BookingState, OfferRequest
from gpubot.domain.ports import LaunchSpec
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.engine import Engine

from bench.engines import bench_engine, bench_policy
from bench.figures import Figure

__all__ = ["run"]

SIZES = {"full": (0.3, 5), "tiny": (0.01, 1)}  # (provider API latency in seconds, measured rounds)
TARGET = 1.3
NAMES = ("a", "b", "c", "d")  # ranked by price: a cheapest; d is the one that can place the booking
SCENARIOS = ("sold out", "refused")


def _engine(url: str, latency: float) -> Engine:
    providers = {name: {"kind": "simulated", "latency": latency,
                        "stock": [{"gpu": "a100", "region": f"{name}-1", "count": 100000, "price": 1.5 + i / 10}]}
                 for i, name in enumerate(NAMES)}
    return bench_engine(url, bench_policy(providers))


def _make_out(engine: Engine, scenario: str) -> None:
    for name in NAMES[:3]:
        cloud = engine.providers[name]
        if scenario == "sold out":
            cloud.set_stock("a100", f"{name}-1", 0)
        else:
            cloud.set_stock("a100", f"{name}-1", 100000)
            cloud.fail_next(NoCapacity(name, "sold out between probe and launch", "provider"))


def _acquire_once(engine: Engine, scenario: str) -> float:
    """Book (its quote warms the offer cache, as the availability job does), then time acquire()."""
    engine.forget()  # no offers remembered from the previous round or scenario
    _make_out(engine, scenario)
    booking = book(engine, BookingAsk(owner="UBENCH", gpu="a100", count=1, duration=timedelta(hours=1))).booking
    started = time.perf_counter()
    placed = acquire(engine, booking.id)
    elapsed = time.perf_counter() - started
    if placed.state != BookingState.ACTIVE or placed.provider != "d":
        raise RuntimeError(f"P2 expected an active booking on d, got {placed.state} on {placed.provider}")
    return elapsed


def _sequential_once(engine: Engine, scenario: str) -> float:
    """A naive failover: ask one cloud for offers, launch if it has any, else move on to the next."""
    _make_out(engine, scenario)
    request = OfferRequest("a100", 1)
    started = time.perf_counter()
    for name in NAMES:
        cloud = engine.providers[name]
        for offer in [o for o in cloud.offers(request) if o.available]:
            try:
                instance = cloud.launch(offer, LaunchSpec(0, f"bench-seq-{name}", "true"))
                elapsed = time.perf_counter() - started
                cloud.terminate(instance)
                return elapsed
            except ProviderError:
                break
    raise RuntimeError("P2 sequential failover placed nothing")


def _floor_once(engine: Engine) -> float:
    cloud = engine.providers["d"]
    offer = cloud.offers(OfferRequest("a100", 1))[0]
    started = time.perf_counter()
    instance = cloud.launch(offer, LaunchSpec(0, "bench-floor", "true"))
    elapsed = time.perf_counter() - started
    cloud.terminate(instance)
    return elapsed


def run(size: str = "full") -> list[Figure]:
    """Acquire time per scenario against one launch round-trip, and the sequential failover beside it."""
    latency, rounds = SIZES[size]
    with tempfile.TemporaryDirectory(prefix="bench-p2-") as tmp:
        engine = _engine(f"sqlite:///{Path(tmp) / 'p2.db'}", latency)
        try:
            floor = statistics.median(_floor_once(engine) for _ in range(rounds))
            figures = []
            for scenario in SCENARIOS:
                ours = statistics.median(_acquire_once(engine, scenario) for _ in range(rounds))
                seq = statistics.median(_sequential_once(engine, scenario) for _ in range(rounds))
                note = f"K=3 of 4 clouds out, {latency * 1000:.0f} ms per provider call, median of {rounds}"
                figures += [Figure(f"P2 acquire, 3 clouds {scenario}", ours, floor, "s", TARGET, note),
                            Figure(f"P2 sequential failover, {scenario}", seq, floor, "s", None, note)]
        finally:
            engine.db.dispose()
    return figures
