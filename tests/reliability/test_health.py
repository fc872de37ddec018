"""Liveness and readiness of `gpubot serve` (issue #20): live while migration runs, ready after; a read-only
SQLite and a PostgreSQL outage make it not ready (503) while it stays live; database faults answer 503."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.databases import postgres_url
from tests.e2e.server_kit import BOT_TOKEN, SECRET, free_port
from tests.reliability.figures import record
from tests.reliability.tcp_cut import TcpRelay

CONFIG = """
[providers.sim]
kind = "simulated"
stock = [{ gpu = "a100", region = "sim-1", count = 8, price = 2.0 }]
"""


@contextmanager
def _serve(tmp: Path, database_url: str, **extra_env: str) -> Iterator[str]:
    """`gpubot serve` on `database_url` without waiting for anything; yields its URL."""
    (tmp / "gpubot.toml").write_text(CONFIG)
    port = free_port()
    env = {**os.environ, "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SECRET,
           "SLACK_API_URL": "http://127.0.0.1:9/api/", "DATABASE_URL": database_url,
           "GPUBOT_CONFIG": str(tmp / "gpubot.toml"), "GPUBOT_HOST": "127.0.0.1", "GPUBOT_PORT": str(port),
           "NO_PROXY": "127.0.0.1,localhost", **extra_env}
    with (tmp / "gpubot.log").open("a") as log:
        process = subprocess.Popen([sys.executable, "-m", "gpubot", "serve"], env=env, cwd=tmp, stdout=log,
                                   stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


def _status(url: str, method: str = "GET", **options) -> int | None:
    try:
        return httpx.request(method, url, timeout=5, **options).status_code
    except httpx.HTTPError:
        return None


def _wait(condition: Callable[[], bool], timeout: float = 30) -> float:
    """Poll `condition` every 10 ms; returns when it first held (monotonic)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.01)
    return time.monotonic()


def test_start_to_live_and_to_ready(tmp_path):
    started = time.monotonic()
    with _serve(tmp_path, f"sqlite:///{tmp_path / 'fresh.db'}") as url:
        live = _wait(lambda: _status(f"{url}/livez") == 200)
        ready = _wait(lambda: _status(f"{url}/readyz") == 200)
    assert live <= ready
    record("health", f"start → live {live - started:.2f} s, start → ready {ready - started:.2f} s "
                     f"(fresh SQLite: migration and reconcile run while live)")


def test_live_but_not_ready_while_migration_waits_for_the_database(tmp_path):
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # holds the write lock: the migration waits behind it
    with _serve(tmp_path, f"sqlite:///{path}") as url:
        _wait(lambda: _status(f"{url}/livez") == 200)
        assert _status(f"{url}/readyz") == 503
        assert _status(f"{url}/slack/events", "POST", content=b"x") == 503
        assert _status(f"{url}/api/telemetry", "POST", content=b"{}") == 503
        holder.execute("ROLLBACK")
        holder.close()
        _wait(lambda: _status(f"{url}/readyz") == 200)


def test_a_read_only_sqlite_is_live_but_not_ready(tmp_path):
    path = tmp_path / "ledger.db"
    with _serve(tmp_path, f"sqlite:///{path}") as url:
        _wait(lambda: _status(f"{url}/readyz") == 200)
    with _serve(tmp_path, f"sqlite:///file:{path}?mode=ro&uri=true") as url:
        _wait(lambda: _status(f"{url}/livez") == 200)
        _wait(lambda: httpx.get(f"{url}/readyz", timeout=5).json().get("started") is True)  # start-up reads only
        answer = httpx.get(f"{url}/readyz", timeout=5)
        assert answer.status_code == 503 and answer.json()["database"] is False


@pytest.fixture
def relayed_postgres() -> Iterator[tuple[str, TcpRelay]]:
    schema_url = postgres_url()
    url = next(schema_url)
    relay = TcpRelay(("127.0.0.1", int(url.split("@127.0.0.1:")[1].split("/")[0])))
    try:
        yield url.replace("@127.0.0.1:5432/", f"@127.0.0.1:{relay.port}/"), relay
    finally:
        relay.close()
        next(schema_url, None)


def test_a_postgresql_outage_answers_503_everywhere_and_stays_live(tmp_path, relayed_postgres):
    database_url, relay = relayed_postgres
    with _serve(tmp_path, database_url) as url:
        _wait(lambda: _status(f"{url}/readyz") == 200)
        relay.cut()
        assert _status(f"{url}/livez") == 200
        assert _status(f"{url}/readyz") == 503
        assert _status(f"{url}/metrics") == 503
        assert _status(f"{url}/api/telemetry", "POST", content=b"{}",
                       headers={"Authorization": "Bearer gpa_0123456789abcdefghij"}) == 503
        relay.restore()
        _wait(lambda: _status(f"{url}/readyz") == 200)
    assert "Traceback" not in (tmp_path / "gpubot.log").read_text()


def test_metrics_on_their_own_port_behind_a_bearer_token(tmp_path):
    metrics_port = free_port()
    with _serve(tmp_path, f"sqlite:///{tmp_path / 'ledger.db'}", METRICS_PORT=str(metrics_port),
                METRICS_TOKEN="metrics-token-0123456789") as url:
        _wait(lambda: _status(f"{url}/readyz") == 200)
        metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        assert _status(f"{url}/metrics") == 404  # not on the public port
        assert _status(metrics) == 401 and _status(metrics, headers={"Authorization": "Bearer wrong"}) == 401
        assert _status(metrics, headers={"Authorization": "Bearer metrics-token-0123456789"}) == 200
        assert _status(f"http://127.0.0.1:{metrics_port}/slack/events", "POST", content=b"x") == 404
    assert "metrics-token-0123456789" not in (tmp_path / "gpubot.log").read_text()
