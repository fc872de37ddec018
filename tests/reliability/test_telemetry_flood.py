"""The telemetry flood of issue #27, against `gpubot serve`: one valid agent token, 16 clients posting 8-GPU batches
as fast as they can. Measured: rows accepted per second and the ledger's telemetry rows, without a limit in
effect (`pushes_per_interval` at its maximum) and with the default one."""

from __future__ import annotations

import json
import re
import threading
import time

import httpx
import pytest
from gpubot.db.tables.telemetry import TelemetrySampleRow
from gpubot.scheduling.agent import issue_agent_token
from sqlalchemy import func
from sqlmodel import select

from gpubot.sandbox import process as sandbox
from tests.e2e.server_kit import config, dm, serving, sim, wait_live
from tests.reliability.figures import record, size


def _config(limit: dict, **sections: dict) -> str:
    """One simulated cloud with `limit` in [health] (and `sections`)."""
    return config(health=limit, providers={"sim": sim(telemetry=False)}, **sections)
LIMITS = {"no limit in effect (pushes_per_interval = 1000)": {"pushes_per_interval": 1000},
          "default limit (4 pushes per 15 s interval, 8 at once)": {}}


def _agent_token(bot, booking_id: int) -> str:
    """A valid agent token of the booking, minted in the bot's ledger as a launch mints the start command's: the
    DM that gives one by hand comes only after `telemetry_stale_after` (5 min here, so that the agent interval, and
    with it the rate limit, is the default 15 s)."""
    with bot.db.session() as session:
        return issue_agent_token(booking_id, session=session)


@pytest.mark.parametrize("name", list(LIMITS))
def test_sixteen_clients_on_one_token_are_held_to_the_rate_limit(tmp_path, name: str) -> None:
    seconds = size(3, 20)
    with serving(tmp_path, _config(LIMITS[name])) as bot:
        bot.command("book a100x8 1h", user="UFLOOD")
        dm(bot, "UFLOOD", "is ready")
        token = _agent_token(bot, 1)
        body = json.dumps({"gpus": [{"index": i, "util": 50.0, "temp_c": 60.0} for i in range(8)]})
        statuses: list[int] = []
        refusals: list[httpx.Response] = []
        lock = threading.Lock()
        deadline = time.monotonic() + seconds

        def client() -> None:
            with httpx.Client(timeout=10) as http:
                while time.monotonic() < deadline:
                    answer = http.post(f"{bot.url}/api/telemetry", content=body, headers={
                        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
                    with lock:
                        statuses.append(answer.status_code)
                        if answer.status_code == 429 and len(refusals) < 3:
                            refusals.append(answer)

        threads = [threading.Thread(target=client) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with bot.db.session() as session:
            rows = session.exec(select(func.count()).select_from(TelemetrySampleRow)).one()
        accepted = statuses.count(204)
        record("telemetry flood", f"16 clients, one token, 8 GPUs a post, {seconds} s, {name}: {len(statuses)} "
                                  f"posts, {accepted} accepted ({accepted * 8 / seconds:.1f} rows/s), "
                                  f"{statuses.count(429)} refused 429; ledger telemetry rows {rows}")
        assert set(statuses) <= {204, 429}
        if not LIMITS[name]:
            assert accepted <= 8 + seconds * 4 / 15 + 1  # the burst, then the rate
            assert refusals and all(r.headers["Retry-After"].isdigit() and r.json()["reason"] == "rate_limited"
                                    for r in refusals)


def test_a_nearly_full_ledger_disk_refuses_telemetry_first_while_booking_goes_on(tmp_path, monkeypatch) -> None:
    """`min_free_disk_mb` above any real disk's free space: the disk counts as nearly full. /readyz says not ready,
    with the reason, and `gpubot_ledger_disk_low` is 1, while booking and release go on."""
    text = _config({}, retention={"min_free_disk_mb": 100000000})
    monkeypatch.setattr(sandbox, "wait_healthy", wait_live)  # /readyz is meant to say no here
    with serving(tmp_path, text) as bot:
        deadline = time.monotonic() + 30
        while not (ready := httpx.get(f"{bot.url}/readyz", timeout=5)).json()["started"]:
            assert time.monotonic() < deadline, ready.text
            time.sleep(0.05)
        assert ready.status_code == 503 and ready.json()["disk"] is False
        assert "MB free (under retention.min_free_disk_mb = 100000000 MB)" in ready.json()["reasons"]["disk"]
        assert all(ok for check, ok in ready.json().items() if isinstance(ok, bool) and check != "disk"), ready.text
        assert re.search(r"^gpubot_ledger_disk_low 1\.0$", httpx.get(f"{bot.url}/metrics").text, re.M)
        bot.command("book a100x8 1h", user="UDISK")
        dm(bot, "UDISK", "is ready")
        token = _agent_token(bot, 1)
        body = json.dumps({"gpus": [{"index": 0, "util": 50.0, "temp_c": 60.0}]})
        refused = httpx.post(f"{bot.url}/api/telemetry", content=body, timeout=10, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        assert refused.status_code == 503 and refused.json()["reason"] == "disk_low"
        assert refused.headers["Retry-After"] == "60"
        bot.command("release #1", user="UDISK")  # booking, release and billing go on
        assert "released" in dm(bot, "UDISK", "#1 released")
        free = re.search(r"^gpubot_ledger_disk_free_bytes (\S+)$", httpx.get(f"{bot.url}/metrics").text, re.M)
        assert free and float(free.group(1)) > 0
        record("telemetry flood", f"ledger disk under retention.min_free_disk_mb: telemetry {refused.status_code} "
                                  f"{refused.json()['reason']}, release still done")
