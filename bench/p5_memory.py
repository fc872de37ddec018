"""P5: resident memory of `gpubot serve` after start and after the P1 load, and the time from spawn to the
first /healthz 200; the floor is the bare Bolt app of P1 (bench/floor_app.py) in the same run."""

from __future__ import annotations

from bench.figures import Figure
from bench.p1_ack import measure

__all__ = ["run"]


def run(size: str = "full") -> list[Figure]:
    """Memory after start, memory after P1, start-up time."""
    ours, floor = measure(size)
    return [Figure("P5 RSS after start", ours.rss_start_mib, floor.rss_start_mib, "MiB"),
            Figure("P5 RSS after P1 load", ours.rss_after_mib, floor.rss_after_mib, "MiB"),
            Figure("P5 start → /healthz 200", ours.startup_seconds, floor.startup_seconds, "s",
                   note="gpubot also migrates the database and reconciles before serving")]
