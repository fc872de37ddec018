"""PagerDuty delivery against a fake Events API v2: retries, outages, redelivery."""

from __future__ import annotations

import pytest

from gpubot.pagerduty import PagerDuty
from tests.fakes.pagerduty_api import FakePagerDuty


@pytest.fixture
def pagerduty():
    fake = FakePagerDuty()
    fake.start()
    yield fake
    fake.stop()


def _pager(fake: FakePagerDuty) -> PagerDuty:
    return PagerDuty(fake.routing_key, fake.url, sleep=lambda _s: None, timeout=2)


def test_trigger_and_resolve_carry_the_dedup_key(pagerduty):
    pager = _pager(pagerduty)
    assert pager(kind="overheat", key="gpubot:overheat:3:0", summary="#3 GPU 0 at 91 °C")
    assert pager(kind="overheat", key="gpubot:overheat:3:0", summary="cooled", resolve=True)
    assert [(e["event_action"], e["dedup_key"]) for e in pagerduty.events] == [
        ("trigger", "gpubot:overheat:3:0"), ("resolve", "gpubot:overheat:3:0")]
    assert pagerduty.events[0]["payload"]["severity"] == "error"


def test_a_5xx_or_429_is_retried(pagerduty):
    pagerduty.inject("status", status=503)
    pagerduty.inject("ratelimit", retry_after="0")
    assert _pager(pagerduty)(kind="orphan", key="k1", summary="s")
    assert len(pagerduty.events) == 1


def test_an_outage_returns_false_instead_of_raising(pagerduty):
    pagerduty.inject("status", status=500, times=10)
    assert _pager(pagerduty)(kind="orphan", key="k2", summary="s") is False
    assert PagerDuty("x", "http://127.0.0.1:9/v2/enqueue", sleep=lambda _s: None)(kind="k", key="k", summary="s") \
        is False
