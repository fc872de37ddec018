"""No command lost to Slack's authorisation (issue #27), against `gpubot serve` and the fake Slack Web API: Slack
answering 503 to `auth.test` for 8 s right after a start, and a revoked token."""

from __future__ import annotations

import time

import httpx

from gpubot.sandbox import process as sandbox
from gpubot.sandbox.slack_api import FakeSlackApi
from tests.e2e.server_kit import owned_booking_ids, serving, settle

CONFIG = """
[team]
admins = ["UADMIN"]

[providers.sim]
kind = "simulated"
telemetry = false
stock = [{ gpu = "a100", region = "sim-1", count = 8, price = 2.0 }]
"""


def _replies(bot, key: str) -> list[str]:
    return [c.args.get("text", "") for c in bot.api.calls if c.method == "response_url" and c.args.get("_key") == key]


def test_a_slack_outage_at_start_keeps_the_command_waiting_then_runs_it(tmp_path) -> None:
    api = FakeSlackApi()
    api.down.add("auth.test")  # Slack's 5xx at a cold start, before Bolt ever authorised the bot
    with serving(tmp_path, CONFIG, api=api) as bot:
        started = time.monotonic()
        assert bot.command("book a100x1 1h", user="UWAIT").status_code == 200
        assert bot.api.wait_for(lambda _c: any("is waiting" in t for t in _replies(bot, "r1")), 15)
        assert not owned_booking_ids(bot, "UWAIT")
        time.sleep(max(0.0, 8 - (time.monotonic() - started)))  # the outage lasts 8 s
        api.down.discard("auth.test")
        deadline = time.monotonic() + 60
        while not owned_booking_ids(bot, "UWAIT"):
            assert time.monotonic() < deadline, "the command waiting for Slack was never run"
            time.sleep(0.1)
        settle(bot)
        assert not [t for t in _replies(bot, "r1") if "was not run" in t]
        assert httpx.get(f"{bot.url}/readyz", timeout=5).status_code == 200


def test_a_revoked_token_answers_every_command_and_turns_readyz_not_ready(tmp_path, monkeypatch) -> None:
    def live(url: str, process, log_path, timeout: float = 30) -> None:  # /readyz is meant to say no here
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"{url}/livez", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and process.poll() is None, log_path.read_text()
            time.sleep(0.05)

    monkeypatch.setattr(sandbox, "wait_healthy", live)
    api = FakeSlackApi()
    api.refusing["auth.test"] = "token_revoked"
    with serving(tmp_path, CONFIG, api=api) as bot:
        deadline = time.monotonic() + 30
        while not (ready := httpx.get(f"{bot.url}/readyz", timeout=5)).json()["started"] or \
                "token_revoked" not in ready.text:
            assert time.monotonic() < deadline, ready.text
            time.sleep(0.1)
        assert ready.status_code == 503 and ready.json()["slack"] is False
        assert "token_revoked" in ready.json()["reasons"]["slack"]
        assert bot.command("book a100x1 1h", user="UREVOKED").status_code == 200
        assert bot.api.wait_for(lambda _c: any("refuses gpubot's bot token" in t for t in _replies(bot, "r1")), 15)
        settle(bot)
        assert not owned_booking_ids(bot, "UREVOKED")
        metrics = httpx.get(f"{bot.url}/metrics", timeout=5).text
        assert "gpubot_slack_auth_ok 0.0" in metrics


