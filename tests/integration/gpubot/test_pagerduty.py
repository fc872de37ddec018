"""PagerDuty's Events API v2 client against the fake: 202 accepted, 400 final, 429/5xx retried with backoff."""

from __future__ import annotations

import logging

import pytest

from gpubot.pagerduty import PagerDuty
from tests.fakes.pagerduty_api import FakePagerDuty


@pytest.fixture
def pagerduty():
    fake = FakePagerDuty()
    fake.start()
    yield fake
    fake.stop()


def _pager(fake: FakePagerDuty, key: str | None = None) -> PagerDuty:
    return PagerDuty(key or fake.routing_key, fake.url, sleep=lambda _s: None, timeout=2)


def test_trigger_and_resolve_carry_the_dedup_key(pagerduty):
    pager = _pager(pagerduty)
    assert pager.page("overheat", "gpubot:overheat:3:0", "#3 GPU 0 at 91 °C") == "accepted"
    assert pager.page("overheat", "gpubot:overheat:3:0", "cooled", resolve=True) == "accepted"
    assert [(e["event_action"], e["dedup_key"]) for e in pagerduty.events] == [
        ("trigger", "gpubot:overheat:3:0"), ("resolve", "gpubot:overheat:3:0")]
    assert pagerduty.events[0]["payload"] == {"summary": "#3 GPU 0 at 91 °C", "source": "gpubot",
                                              "severity": "error", "component": "overheat"}


def test_a_5xx_or_429_is_retried(pagerduty):
    pagerduty.inject("status", status=503)
    pagerduty.inject("ratelimit", retry_after="0")
    assert _pager(pagerduty).page("orphan", "k1", "s") == "accepted"
    assert len(pagerduty.events) == 1 and len(pagerduty.requests) == 3


def test_a_400_is_final_logged_once_and_not_retried(pagerduty, caplog):
    with caplog.at_level(logging.WARNING):
        assert _pager(pagerduty, key="not-our-routing-key").page("orphan", "k3", "s") == "rejected"
    assert len(pagerduty.requests) == 1 and pagerduty.events == []
    [logged] = [r for r in caplog.records if "PagerDuty" in r.getMessage()]
    assert "400" in logged.getMessage() and "routing_key" in logged.getMessage()


def test_an_outage_is_a_failure_to_send_again_later(pagerduty):
    pagerduty.inject("status", status=500, times=10)
    assert _pager(pagerduty).page("orphan", "k2", "s") == "failed"
    assert PagerDuty("x", "http://127.0.0.1:9/v2/enqueue", sleep=lambda _s: None).page("k", "k", "s") == "failed"
