"""P4: one scheduler tick of every job in scheduling/jobs.job_table with N queued and N/5 active bookings
(simulated providers answering at once), at N = 1 k and N = 10 k. The "floor" of a job is ten times its tick at
1 k: a ratio at or under 1 means the job grows linearly or better."""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from gpubot.db.tables.bookings import BookingRow
from gpubot.db.tables.telemetry import TelemetrySampleRow
from gpubot.domain.model import OfferRequest
from gpubot.domain.ports import LaunchSpec
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.jobs import job_table

from bench.engines import BenchClock, bench_engine, bench_policy
from bench.figures import Figure

__all__ = ["run", "tick_times"]

SIZES = {"full": (1_000, 10_000, 3), "tiny": (10, 30, 1)}  # (small N, large N, ticks measured)
TARGET = 1.0


def _active_rows(engine: Engine, first_id: int, n: int) -> tuple[list[dict], list[dict]]:
    """Bookings running on real (simulated) instances, and two recent readings per GPU."""
    now, cloud = engine.now(), engine.providers["sim"]
    offer = cloud.offers(OfferRequest("a100", 2))[0]
    bookings, samples = [], []
    for i in range(first_id, first_id + n):
        name = f"gpubot-{i}-bench"
        instance = cloud.launch(offer, LaunchSpec(i, name, "true"))
        bookings.append({"id": i, "owner": f"U{i % 200:03d}", "gpu": "a100", "count": 2, "duration_s": 36000,
                         "state": "active", "spot": False, "provider": "sim", "region": "sim-1",
                         "instance_id": instance.instance_id, "instance_name": name, "price_per_gpu_hour": 2.0,
                         "currency": "USD", "requested_at": now - timedelta(hours=1),
                         "started_at": now - timedelta(hours=1), "ends_at": now + timedelta(hours=9),
                         "connect": instance.ssh, "attempt_rounds": 0})
        samples += [{"booking_id": i, "gpu_index": g, "util": 80.0, "temp_c": 60.0, "at": now - timedelta(seconds=s)}
                    for g in range(2) for s in (30, 90)]
    return bookings, samples


def _queued_rows(engine: Engine, first_id: int, n: int) -> list[dict]:
    now = engine.now()
    return [{"id": i, "owner": f"U{i % 200:03d}", "gpu": "a100", "count": 1, "duration_s": 3600, "state": "queued",
             "spot": False, "requested_at": now - timedelta(minutes=30), "next_attempt_at": now - timedelta(minutes=1),
             "attempt_rounds": 1} for i in range(first_id, first_id + n)]


def _fill(engine: Engine, queued: int) -> None:
    active, samples = _active_rows(engine, 1, queued // 5)
    with engine.db.engine.begin() as conn:
        conn.execute(BookingRow.__table__.insert(), active)
        conn.execute(BookingRow.__table__.insert(), _queued_rows(engine, len(active) + 1, queued))
        conn.execute(TelemetrySampleRow.__table__.insert(), samples)


def tick_times(queued: int, ticks: int) -> dict[str, float]:
    """Median seconds per tick of each job, with `queued` queued and queued/5 active bookings."""
    providers = {"sim": {"kind": "simulated", "stock": [{"gpu": "a100", "region": "sim-1", "count": 10**7,
                                                         "price": 2.0}]}}
    clock = BenchClock()
    with tempfile.TemporaryDirectory(prefix="bench-p4-") as tmp:
        engine = bench_engine(f"sqlite:///{Path(tmp) / 'p4.db'}", bench_policy(providers), clock)
        try:
            _fill(engine, queued)
            times: dict[str, list[float]] = {}
            # What exists before the ticks is nobody's garbage: frozen, the collections below scan only what the
            # jobs made, not the whole process (a test worker's heap made each one cost ~0.3 s).
            gc.freeze()
            for _ in range(ticks):
                for name, (call, _interval) in job_table(engine).items():
                    gc.collect()  # each job pays for its own garbage, not for a collection the previous one owed
                    started = time.perf_counter()
                    call()
                    times.setdefault(name, []).append(time.perf_counter() - started)
                clock.advance(seconds=10)
        finally:
            gc.unfreeze()
            engine.db.dispose()
    return {name: statistics.median(values) for name, values in times.items()}


def run(size: str = "full") -> list[Figure]:
    """Each job's tick at the large N against ten times its tick at the small N, and the whole tick."""
    small, large, ticks = SIZES[size]
    at_small, at_large = tick_times(small, ticks), tick_times(large, ticks)
    scale = large / small
    note = f"{large:,} queued + {large // 5:,} active vs {scale:g}× the tick at {small:,} + {small // 5:,}"
    figures = [Figure(f"P4 tick {name}", at_large[name] * 1000, at_small[name] * 1000 * scale, "ms", TARGET, note)
               for name in at_large]
    return [*figures, Figure("P4 tick, every job", sum(at_large.values()) * 1000,
                             sum(at_small.values()) * 1000 * scale, "ms", TARGET, note)]
