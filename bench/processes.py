"""Processes the benchmarks start and watch: the fake Slack API, the floor app, resident memory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from gpubot.sandbox.process import free_port, wait_healthy

__all__ = ["Served", "cpu_seconds", "rss_mib", "start_fake_slack", "start_floor", "stop"]


@dataclass
class Served:
    """A process serving HTTP on `url`, and how long it took to answer /healthz with 200."""

    url: str
    process: subprocess.Popen
    startup_seconds: float = 0.0


def start_fake_slack(log: Path) -> Served:
    """The fake Slack Web API in a child process."""
    process = subprocess.Popen([sys.executable, "-m", "bench.slack_process"], stdout=subprocess.PIPE,
                               stderr=log.open("w"), text=True)
    url = process.stdout.readline().strip()  # type: ignore[union-attr]
    if not url:
        raise RuntimeError(f"the fake Slack API did not start: {log.read_text()[-2000:]}")
    return Served(url, process)


def start_floor(log: Path, api_url: str) -> Served:
    """The bare Bolt app (bench/floor_app.py), timed from spawn to its first /healthz 200."""
    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "bench.floor_app", str(port), api_url],
                               stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, process, log)
    return Served(url, process, time.perf_counter() - started)


def stop(process: subprocess.Popen) -> None:
    """Terminate a child process (kill it if it lingers)."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def rss_mib(pid: int) -> float:
    """Resident memory of a process (VmRSS), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far (user + system, all its threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
