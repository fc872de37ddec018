"""P1: Slack ack latency of signed `/gpu book` and `/gpu status` requests, many clients at once, against the
running `gpubot serve` (SQLite); the floor is a bare Bolt app on the same server stack that only acks.
P5 (memory, start-up) reads the same run."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import httpx

from bench.figures import Figure, percentile
from bench.processes import Served, cpu_seconds, rss_mib, start_fake_slack, start_floor, stop
from gpubot.sandbox.process import SECRET, start_bot
from gpubot.sandbox.requests import sign, slash_command_body

__all__ = ["AckRun", "measure", "run"]

SIZES = {"full": (50, 20), "tiny": (3, 2)}  # (concurrent clients, requests per client)
TARGET = 1.2
SETTLED = 0.05  # CPU seconds per half second under which a server counts as idle again after the round
SETTLE_LIMIT = 60.0  # seconds to wait for it
CONFIG = """
[team]
admins = ["UADMIN"]
alerts_channel = "CALERTS"

[budget]
monthly = 100000000

[booking]
max_gpus_per_user = 100000

[providers.sim]
kind = "simulated"
stock = [{ gpu = "a100", region = "sim-1", count = 100000, price = 2.42 }]
"""


@dataclass
class AckRun:
    """Ack latencies (seconds) per command, start-up time and resident memory, for one server."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: int = 0
    startup_seconds: float = 0.0
    rss_start_mib: float = 0.0
    rss_after_mib: float = 0.0
    round_seconds: float = 0.0  # how long the measured rounds took
    cpu_seconds: float = 0.0  # the server's CPU time over the measured rounds
    cpu_after_seconds: float = 0.0  # … and after each, until it is idle again (work deferred past the acks)
    settle_seconds: float = 0.0  # how long that took

async def _client(http: httpx.AsyncClient, url: str, slack: str, n: int, who: int, run: AckRun) -> None:
    for i in range(n):
        command = "book" if (i + who) % 2 == 0 else "status"  # half of each load, however short
        text = "book a100x1 1h" if command == "book" else "status"
        body = slash_command_body(text, user=f"U{who:03d}", channel="CGPU",
                                  response_url=f"{slack}/response/c{who}-{i}")
        headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)}
        started = time.perf_counter()
        try:
            response = await http.post(f"{url}/slack/events", content=body, headers=headers)
        except httpx.TransportError:  # counted, not measured: a dropped request has no latency
            run.errors += 1
            continue
        run.latencies.setdefault(command, []).append(time.perf_counter() - started)
        run.errors += response.status_code != 200


async def _load(http: httpx.AsyncClient, url: str, slack: str, clients: int, per_client: int) -> AckRun:
    run = AckRun()
    await asyncio.gather(*(_client(http, url, slack, per_client, who, run) for who in range(clients)))
    return run


def _settle(pid: int) -> tuple[float, float]:
    """(CPU seconds, seconds) a server spends after the round until it idles: the work it left for later."""
    started = before = cpu_seconds(pid)
    began = time.perf_counter()
    while time.perf_counter() - began < SETTLE_LIMIT:
        time.sleep(0.5)
        now = cpu_seconds(pid)
        if now - before < SETTLED:
            return now - started, time.perf_counter() - began
        before = now
    return before - started, time.perf_counter() - began


async def _round(served: Served, http: httpx.AsyncClient, slack: str, clients: int, per_client: int,
                 run: AckRun) -> None:
    """One measured round added to `run`, and the work the server left for after it."""
    pid = served.process.pid
    cpu_before, started = cpu_seconds(pid), time.perf_counter()
    part = await _load(http, served.url, slack, clients, per_client)
    run.round_seconds += time.perf_counter() - started
    run.cpu_seconds += cpu_seconds(pid) - cpu_before
    after_cpu, after_seconds = _settle(pid)
    run.cpu_after_seconds += after_cpu
    run.settle_seconds += after_seconds
    for command, latencies in part.latencies.items():
        run.latencies.setdefault(command, []).extend(latencies)
    run.errors += part.errors


@contextmanager
def _frozen(process: subprocess.Popen) -> Iterator[None]:
    """The other server stopped (SIGSTOP) while one is measured, so its timers take no CPU from the round."""
    os.kill(process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(process.pid, signal.SIGCONT)


async def _bracketed(floor: Served, ours: Served, slack: str, clients: int, per_client: int
                     ) -> tuple[AckRun, AckRun]:
    """The floor's requests in two halves around gpubot's one round (A B A), each server measured while the other
    is stopped: a load that drifts during the run weighs on both alike, where one whole run after the other
    charged it to whichever went second. Each server keeps its clients' connections from the warm-up on, so
    opening them costs neither server a round; gpubot's round is one piece, as a single round would be."""
    runs, rss = (AckRun(), AckRun()), []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=30) as floor_http, \
            httpx.AsyncClient(limits=limits, timeout=30) as ours_http:
        for served, http in ((floor, floor_http), (ours, ours_http)):  # warm-up, its own work done
            rss.append(rss_mib(served.process.pid))
            await _load(http, served.url, slack, clients, 1)
            _settle(served.process.pid)
        half = per_client // 2
        for me, http, share in ((0, floor_http, half), (1, ours_http, per_client), (0, floor_http, per_client - half)):
            with _frozen((ours, floor)[me].process):
                await _round((floor, ours)[me], http, slack, clients, share, runs[me])
    for run, served, before in zip(runs, (floor, ours), rss, strict=True):
        run.startup_seconds, run.rss_start_mib, run.rss_after_mib = (served.startup_seconds, before,
                                                                     rss_mib(served.process.pid))
    return runs


@lru_cache(maxsize=2)
def measure(size: str) -> tuple[AckRun, AckRun]:
    """(gpubot, floor) under the same load, the floor's round split around gpubot's."""
    clients, per_client = SIZES[size]
    with tempfile.TemporaryDirectory(prefix="bench-p1-") as tmp:
        slack = start_fake_slack(Path(tmp) / "slack.log")
        try:
            floor = start_floor(Path(tmp) / "floor.log", f"{slack.url}/api/")
            try:
                with _ours(Path(tmp), slack.url) as ours:
                    floor_run, ours_run = asyncio.run(_bracketed(floor, ours, slack.url, clients, per_client))
            finally:
                stop(floor.process)
        finally:
            stop(slack.process)
    return ours_run, floor_run


@contextmanager
def _ours(tmp: Path, slack: str) -> Iterator[Served]:
    started = time.perf_counter()
    bot = start_bot(tmp, CONFIG, extra_env={"SLACK_API_URL": f"{slack}/api/", "LOG_LEVEL": "WARNING"})
    startup = time.perf_counter() - started
    bot.api.stop()  # start_bot's own in-process fake is unused: the bot talks to the one in its own process
    try:
        yield Served(bot.url, bot.process, startup)
    finally:
        bot.stop()


def run(size: str = "full") -> list[Figure]:
    """p50 and p99 ack latency of `/gpu book` and `/gpu status`, and what makes the difference to the floor."""
    ours, floor = measure(size)
    clients, per_client = SIZES[size]
    print("\n".join(explain(ours, floor, clients, clients * per_client)))
    note = (f"{clients} concurrent clients, {clients * per_client} requests; non-200: {ours.errors}/{floor.errors}; "
            "gpubot's ack verifies and records the command in its inbox (one INSERT in its own SQLite file); Bolt's "
            "dispatch and the booking run after a lull in the acks, the floor's Bolt dispatch runs in its ack")
    return [Figure(f"P1 ack /gpu {command} p{pct}", percentile(ours.latencies[command], pct) * 1000,
                   percentile(floor.latencies[command], pct) * 1000, "ms", TARGET, note)
            for command in ("book", "status") for pct in (50, 99)]


def explain(ours: AckRun, floor: AckRun, clients: int, requests: int) -> list[str]:
    """What gpubot's ack does that the floor's does not, and where the server CPU of this run went."""
    per = lambda run: run.cpu_seconds / requests * 1000  # noqa: E731
    return [
        "P1: gpubot's ack does what the floor's does (the HTTP stack, one signature check, parsing the form) and:",
        "  + records the command in the inbox before answering: one INSERT in the inbox's own SQLite file",
        "  + passes gpubot's own HTTP layers: body bound, start-up gate, metrics port, the ack-latency metric",
        "  - leaves Bolt's dispatch (listener thread, its 10 ms ack poll) to after the ack, which the floor runs in it",
        "  then Bolt's dispatch and the booking run on their own threads once the acks pause for 0.1 s (at most 10 s)",
        "  the floor's requests in two halves before and after gpubot's round (A B A), the other server stopped,",
        "  each server on the connections its clients opened in the warm-up",
        f"  server CPU per request during the rounds: gpubot {per(ours):.2f} ms, floor {per(floor):.2f} ms "
        f"(rounds {ours.round_seconds:.1f} s / {floor.round_seconds:.1f} s); with {clients} clients on a few CPUs "
        "the latency is mostly queueing, so it follows the CPU per request",
        f"  work left for after the rounds: gpubot {ours.cpu_after_seconds:.1f} s CPU over {ours.settle_seconds:.1f} s "
        f"(its bookings), floor {floor.cpu_after_seconds:.1f} s",
    ]
