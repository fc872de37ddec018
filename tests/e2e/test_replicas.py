"""Two `gpubot serve` replicas on one PostgreSQL: exactly one leads the scheduler; killing it hands over."""

from __future__ import annotations

import re
import signal
import time
from contextlib import contextmanager

import httpx
import pytest

from gpubot.sandbox.requests import action_body
from gpubot.sandbox.slack_api import FakeSlackApi
from tests.databases import postgres_url
from tests.e2e.server_kit import settle, start_bot

CONFIG = """
[providers.sim]
kind = "simulated"
stock = [{ gpu = "a100", region = "sim-1", count = 8, price = 2.0 }]
"""


@pytest.fixture
def pg_url():
    yield from postgres_url()


def _leads(bot) -> bool | None:
    try:
        text = httpx.get(f"{bot.url}/metrics", timeout=5).text
    except httpx.HTTPError:
        return None
    match = re.search(r"^gpubot_scheduler_leader (\S+)$", text, re.M)
    return bool(match and float(match.group(1)) == 1.0)


def _wait(predicate, timeout: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.25)
    return None


@contextmanager
def _two_replicas(tmp_path, pg_url):
    """Two `gpubot serve` on one PostgreSQL and one fake Slack: (api, first, second); stopped afterwards."""
    api = FakeSlackApi()
    api.start()
    env = {"DATABASE_URL": pg_url}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = start_bot(tmp_path / "a", CONFIG, api, env)
    second = start_bot(tmp_path / "b", CONFIG, api, env)
    try:
        yield api, first, second
    finally:
        for bot in (first, second):
            bot.stop()
        api.stop()


def test_one_leader_and_takeover_within_30s(tmp_path, pg_url):
    with _two_replicas(tmp_path, pg_url) as (api, first, second):
        assert _wait(lambda: [_leads(first), _leads(second)].count(True) == 1, 20) is not None
        leader, other = (first, second) if _leads(first) else (second, first)
        assert _leads(other) is False
        leader.process.send_signal(signal.SIGKILL)
        leader.process.wait(10)
        took = _wait(lambda: _leads(other) is True, 30)
        assert took is not None, "the surviving replica did not take over within 30 s"
        print(f"\ntakeover after SIGKILL of the leader: {took:.1f} s")
        other.command("book a100x1 1h", user="UALICE")
        assert api.wait_for(lambda calls: any("is ready" in c.args.get("text", "") for c in calls), 15)


def test_a_booking_message_updated_by_the_other_replica_keeps_its_quote(tmp_path, pg_url):
    """The quote lines of a booking's message live in the ledger: the replica that did not post the message
    (or one started since) updates it with the same quote above the new state."""
    with _two_replicas(tmp_path, pg_url) as (api, first, second):
        first.command("book a100x1 1h", user="UALICE")
        assert api.wait_for(lambda calls: any("is ready" in c.args.get("text", "") for c in calls), 15)
        posted = next(c for c in api.calls_to("chat.postMessage") if c.args.get("channel") == "CGPU")
        quote = next(line for line in posted.args["text"].splitlines() if line.startswith("≈ $"))
        first.stop()  # the replica that posted the message is gone: what it kept in memory with it
        second.command("release 1", user="UALICE")
        ts = posted.result["ts"]
        assert api.wait_for(lambda calls: any(c.method == "chat.update" and c.args.get("ts") == ts
                                              and "released" in c.args.get("text", "") for c in calls), 15)
        released = [c for c in api.calls_to("chat.update") if c.args.get("ts") == ts
                    and "released" in c.args.get("text", "")][-1]
        assert quote in released.args["text"], released.args["text"]


def test_a_keep_click_reaching_both_replicas_confirms_once(tmp_path, pg_url):
    """Slack's retry of a Keep click lands on the other replica, and the owner clicks Keep on a second reminder
    there too: one confirmation, as the outbox owes it once per idle stretch."""
    with _two_replicas(tmp_path, pg_url) as (api, first, second):
        first.command("book a100x1 1h", user="UALICE")
        assert api.wait_for(lambda calls: any("is ready" in c.args.get("text", "") for c in calls), 15)
        body = action_body("idle_keep", "1", user="UALICE", channel="UALICE", message_ts="2.1",
                           response_url=api.response_url("keep"))
        assert first.post(body).status_code == 200
        assert second.post(body, {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
                           ).status_code == 200
        second.click("idle_keep", 1, user="UALICE", message_ts="2.2", channel="UALICE")
        assert api.wait_for(lambda calls: any(c.args.get("text", "").startswith("#1 kept") for c in calls), 15)
        settle(first)  # the replicas share the ledger: its inbox and outbox are both of theirs
        kept = [c.args["text"] for c in api.calls_to("chat.postMessage") if c.args["text"].startswith("#1 kept")]
        assert kept == ["#1 kept: no more idle reminders for this idle stretch."]
