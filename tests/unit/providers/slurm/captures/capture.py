"""Capture what Slurm's client tools print, for the parser tests.

`python -m tests.unit.providers.slurm.captures.capture` (as root, with the Slurm packages installed) starts the
test cluster (tests/slurm_cluster.py), drives it through the states the adapter reads and writes each tool's output
here. It takes about 90 s (one job is left to reach its time limit). The captured ids, times and indices are what
the tests assert, so a new capture means updating them. `… capture full` captures only the full node's files
(`_capture_full`, about 2 s), leaving the others as they are."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.slurm_cluster import TEST_USER, ensure_test_user, start_cluster, stop_cluster, wait_for

HERE = Path(__file__).parent


def main() -> None:
    ensure_test_user()
    cluster = start_cluster()
    try:
        (_capture_full if sys.argv[1:] == ["full"] else _capture)(cluster)
    finally:
        stop_cluster(cluster)


def _write(name: str, text: str) -> None:
    (HERE / name).write_text(text)
    print(f"wrote {name} ({len(text)} bytes)")


def _submit(cluster, *args: str, check: bool = True):
    return cluster.run("sbatch", "--parsable", f"--uid={TEST_USER}", f"--gid={TEST_USER}", "--export=NONE",
                       f"--chdir={cluster.scratch}", "--output=/dev/null", "--partition=gpu", "--nodes=1", *args,
                       input="#!/bin/bash\nexec sleep 600\n", check=check)


def _state(cluster, job: str) -> str:
    return cluster.run("squeue", "-h", "-t", "all", "-j", job, "-o", "%T").stdout.strip()


def _capture(cluster) -> None:
    show = ("scontrol", "-o", "show")
    _write("node_idle.txt", cluster.run(*show, "node", "-d").stdout)
    _write("partition.txt", cluster.run(*show, "partition", "gpu").stdout)
    running = _submit(cluster, "--job-name=gpubot-42-ab12cd34", "--comment=gpubot-booking=42",
                      "--gres=gpu:a100:2", "--time=5").stdout.strip()
    wait_for(lambda: _state(cluster, running) == "RUNNING", 15, "the job to run")
    _write("job_running.txt", cluster.run(*show, "job", "-d", running).stdout)
    fill = [_submit(cluster, f"--job-name=gpubot-{n}-fill0000", "--gres=gpu:h100:2", "--time=3").stdout.strip()
            for n in (43, 44)]
    wait_for(lambda: all(_state(cluster, j) == "RUNNING" for j in fill), 15, "the h100 jobs to run")
    _write("node_busy.txt", cluster.run(*show, "node", "-d").stdout)
    waiting = _submit(cluster, "--job-name=gpubot-45-cd56ef78", "--comment=gpubot-booking=45",
                      "--gres=gpu:h100:2", "--time=2").stdout.strip()
    _write("job_pending_unplaced.txt", cluster.run(*show, "job", "-d", waiting).stdout)
    wait_for(lambda: "StartTime=Unknown" not in cluster.run(*show, "job", waiting).stdout, 15, "an estimate")
    _write("job_pending.txt", cluster.run(*show, "job", "-d", waiting).stdout)
    _write("squeue_start.txt", cluster.run("squeue", "--start", "-h", "-j", waiting, "-o", "%i|%S|%r").stdout)
    _write("jobs_all.txt", cluster.run(*show, "job", "-d").stdout)
    cluster.run("scancel", waiting)
    wait_for(lambda: _state(cluster, waiting) == "CANCELLED", 15, "the cancel")
    _write("job_cancelled_pending.txt", cluster.run(*show, "job", "-d", waiting).stdout)
    too_big = _submit(cluster, "--gres=gpu:a100:9", "--time=1", check=False)
    _write("sbatch_too_big.txt", too_big.stderr)
    test_only = cluster.run("sbatch", "--test-only", "--partition=gpu", "--gres=gpu:a100:9", "--time=1",
                            "--wrap=true", check=False)
    _write("test_only_too_big.txt", test_only.stderr)
    _write("show_job_gone.txt", cluster.run(*show, "job", "-d", "99999", check=False).stderr)
    _write("update_job_gone.txt", cluster.run("scontrol", "update", "JobId=99999", "TimeLimit=5", check=False).stderr)
    cluster.run("scancel", running, *fill)
    wait_for(lambda: not cluster.job_ids("R,CG"), 15, "the jobs to end")
    _write("job_cancelled.txt", cluster.run(*show, "job", "-d", running).stdout)
    timed = _submit(cluster, "--job-name=gpubot-46-0a1b2c3d", "--gres=gpu:a100:1", "--time=1").stdout.strip()
    started = time.monotonic()
    wait_for(lambda: _state(cluster, timed) == "TIMEOUT", 120, "the time limit", every=1)
    print(f"time limit of 1 min ended the job after {time.monotonic() - started:.0f}s")
    _write("job_timeout.txt", cluster.run(*show, "job", "-d", timed).stdout)


def _capture_full(cluster) -> None:
    """A node whose eight GPUs are all held (two 4-GPU jobs), a third 4-GPU job waiting for them (`Resources`, with
    the scheduler's estimate) and a fourth behind it (`Priority`, no estimate: `squeue --start` says N/A)."""
    show = ("scontrol", "-o", "show")
    held = [_submit(cluster, f"--job-name=gpubot-{n}-full0000", f"--gres=gpu:{gpu}:4", "--time=5").stdout.strip()
            for n, gpu in ((50, "a100"), (51, "h100"))]
    wait_for(lambda: all(_state(cluster, j) == "RUNNING" for j in held), 15, "the 4-GPU jobs to run")
    _write("node_full.txt", cluster.run(*show, "node", "-d").stdout)
    third = _submit(cluster, "--job-name=gpubot-52-9e8d7c6b", "--comment=gpubot-booking=52", "--gres=gpu:a100:4",
                    "--time=5").stdout.strip()
    fourth = _submit(cluster, "--job-name=gpubot-53-5a4b3c2d", "--comment=gpubot-booking=53", "--gres=gpu:a100:2",
                     "--time=5").stdout.strip()
    wait_for(lambda: "Reason=Priority" in cluster.run(*show, "job", fourth).stdout, 15, "the fourth's reason")
    _write("job_pending_priority.txt", cluster.run(*show, "job", "-d", fourth).stdout)  # before the backfill pass
    _write("squeue_start_full.txt", cluster.run("squeue", "--start", "-h", "-o", "%i|%S|%r").stdout)
    wait_for(lambda: "Reason=Resources" in (out := cluster.run(*show, "job", third).stdout)
             and "StartTime=Unknown" not in out, 15, "the third's reason and estimate")
    _write("job_pending_full.txt", cluster.run(*show, "job", "-d", third).stdout)


if __name__ == "__main__":
    main()
