"""P1: Slack ack latency of signed `/gpu book` and `/gpu status` requests, many clients at once, against the
running `gpubot serve` (SQLite); the floor is a bare Bolt app on the same server stack that only acks.
P5 (memory, start-up) reads the same run."""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import httpx

from bench.figures import Figure, percentile
from bench.processes import rss_mib, start_fake_slack, start_floor, stop
from gpubot.sandbox.process import SECRET, start_bot
from gpubot.sandbox.requests import sign, slash_command_body

__all__ = ["AckRun", "measure", "run"]

SIZES = {"full": (50, 20), "tiny": (3, 2)}  # (concurrent clients, requests per client)
TARGET = 1.5
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


async def _client(http: httpx.AsyncClient, url: str, slack: str, n: int, who: int, run: AckRun) -> None:
    for i in range(n):
        command = "book" if i % 2 == 0 else "status"
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


async def _load(url: str, slack: str, clients: int, per_client: int) -> AckRun:
    run = AckRun()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=30) as http:
        await asyncio.gather(*(_client(http, url, slack, per_client, who, run) for who in range(clients)))
    return run


def _drive(url: str, slack: str, pid: int, clients: int, per_client: int, startup: float) -> AckRun:
    """A warm-up round, then the measured round; memory read before and after."""
    rss_start = rss_mib(pid)
    asyncio.run(_load(url, slack, clients, 1))
    run = asyncio.run(_load(url, slack, clients, per_client))
    run.startup_seconds, run.rss_start_mib, run.rss_after_mib = startup, rss_start, rss_mib(pid)
    return run


@lru_cache(maxsize=2)
def measure(size: str) -> tuple[AckRun, AckRun]:
    """(gpubot, floor) under the same load."""
    clients, per_client = SIZES[size]
    with tempfile.TemporaryDirectory(prefix="bench-p1-") as tmp:
        slack = start_fake_slack(Path(tmp) / "slack.log")
        try:
            floor = start_floor(Path(tmp) / "floor.log", f"{slack.url}/api/")
            try:
                floor_run = _drive(floor.url, slack.url, floor.process.pid, clients, per_client,
                                   floor.startup_seconds)
            finally:
                stop(floor.process)
            ours = _ours(Path(tmp), slack.url, clients, per_client)
        finally:
            stop(slack.process)
    return ours, floor_run


def _ours(tmp: Path, slack: str, clients: int, per_client: int) -> AckRun:
    started = time.perf_counter()
    bot = start_bot(tmp, CONFIG, extra_env={"SLACK_API_URL": f"{slack}/api/", "LOG_LEVEL": "WARNING"})
    startup = time.perf_counter() - started
    bot.api.stop()  # start_bot's own in-process fake is unused: the bot talks to the one in its own process
    try:
        return _drive(bot.url, slack, bot.process.pid, clients, per_client, startup)
    finally:
        bot.stop()


def run(size: str = "full") -> list[Figure]:
    """p50 and p99 ack latency of `/gpu book` and `/gpu status`."""
    ours, floor = measure(size)
    clients, per_client = SIZES[size]
    note = (f"{clients} concurrent clients, {clients * per_client} requests; non-200: {ours.errors}/{floor.errors}; "
            "gpubot records each command in its inbox (one INSERT) before the ack, the floor does not")
    return [Figure(f"P1 ack /gpu {command} p{pct}", percentile(ours.latencies[command], pct) * 1000,
                   percentile(floor.latencies[command], pct) * 1000, "ms", TARGET, note)
            for command in ("book", "status") for pct in (50, 99)]
