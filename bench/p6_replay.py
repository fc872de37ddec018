"""P6: seconds per policy of `gpubot replay` over a 71-day trace of ~6,000 multi-GPU jobs (issue 10: under 60 s
per policy). It runs the real CLI in a subprocess and reads each policy's replay time from replay.json.

The trace is the Philly subset in $GPUBOT_PHILLY_DIR (its jobs.csv and util.csv, see docs/replay.md for where it comes
from), read in place, never copied.
Where it is missing, and at the tiny size, a seeded trace of the same shape is generated instead. The "floor"
column is the budget, 60 s per 5,847 jobs pro rata, not a measured floor.
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.figures import Figure

__all__ = ["run"]

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "bench" / "replay-philly.toml"
BUDGET_SECONDS, BUDGET_JOBS = 60.0, 5_847
SIZES = {"full": 5_847, "tiny": 40}  # jobs in a generated trace
SPAN_S = 71 * 86_400


def _philly() -> Path | None:
    named = os.environ.get("GPUBOT_PHILLY_DIR")
    directory = Path(named) if named else None
    return directory if directory and (directory / "jobs.csv").is_file() and (directory / "util.csv").is_file() \
        else None


def _generated(directory: Path, jobs: int, seed: int = 7) -> tuple[Path, Path]:
    """A Philly-shaped trace: multi-GPU jobs in its two memory classes, log-spread run times, some utilisation."""
    rng = random.Random(seed)
    span = SPAN_S * jobs // BUDGET_JOBS
    rows = sorted((rng.randrange(span), rng.choice([2, 4, 8, 8, 16]), rng.choice(["12GB", "12GB", "24GB"]),
                   int(rng.lognormvariate(8.5, 1.6)) + 60) for _ in range(jobs))
    trace, util = directory / "jobs.csv", directory / "util.csv"
    with trace.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["job_id", "submit_time_s", "gpus", "gpu_type", "duration_s", "user"])
        writer.writerows([f"job{i}", *row, f"u{i % 40}"] for i, row in enumerate(rows))
    with util.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["job_id", "t_s", "gpu_util"])
        for i, (_submit, _gpus, _type, duration) in enumerate(rows[::2]):  # t_s counts from the job's start
            window = rng.randrange(max(1, duration - 900))
            writer.writerows([f"job{2 * i}", window + minute * 60, rng.choice([3.0, 50.0, 95.0])]
                             for minute in range(min(15, duration // 60)))
    return trace, util


def _replay(trace: Path, util: Path, out: Path) -> dict[str, float]:
    """Seconds per policy, as `gpubot replay` reports them."""
    command = [sys.executable, "-m", "gpubot", "replay", "--trace", str(trace), "--util", str(util),
               "--config", str(CONFIG), "--out", str(out)]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)
    report = json.loads((out / "replay.json").read_text())
    return {p["policy"]: p["replay_seconds"] for p in report["policies"]}


def run(size: str = "full") -> list[Figure]:
    """Replay time of every policy, against the 60 s budget (pro rata for a smaller trace)."""
    with tempfile.TemporaryDirectory(prefix="gpubot-p6-") as scratch:
        directory = Path(scratch)
        philly = _philly() if size == "full" else None
        trace, util = (philly / "jobs.csv", philly / "util.csv") if philly else \
            _generated(directory, SIZES[size])
        with trace.open() as handle:
            jobs = sum(1 for _ in handle) - 1
        seconds = _replay(trace, util, directory / "out")
    source = "Philly subset" if philly else "generated trace"
    budget = BUDGET_SECONDS * jobs / BUDGET_JOBS
    return [Figure(f"P6 replay {policy}", max(elapsed, 0.01), budget, "s", target=1.0,
                   note=f"{source}, {jobs:,} jobs; floor = the budget (60 s per {BUDGET_JOBS:,} jobs)")
            for policy, elapsed in seconds.items()]
