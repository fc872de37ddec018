"""On-call alerts over two channels — the alerts channel (the recording notifier) and PagerDuty (its fake) — each
delivered, and redelivered, on its own: a PagerDuty redelivery never posts to Slack again, a failed resolve is
sent again like a trigger, a 400 is never sent again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from gpubot.db import alerts as alert_repo
from gpubot.scheduling.lifecycle.alerts import raise_alert, redeliver, resolve_alert

from gpubot.pagerduty import PagerDuty
from tests.engine_kit import make_engine, simulated_policy
from tests.fakes.pagerduty_api import FakePagerDuty

KEY = "gpubot:overheat:7:0"


@pytest.fixture
def pagerduty() -> Iterator[FakePagerDuty]:
    fake = FakePagerDuty()
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def engine(database_url, clock, pagerduty):
    engine = make_engine(database_url, simulated_policy(), clock)
    engine.pager = PagerDuty(pagerduty.routing_key, pagerduty.url, sleep=lambda _s: None, timeout=2)
    return engine


def _row(engine):
    with engine.db.session() as session:
        [row] = alert_repo.alerts_between(engine.now().replace(year=2000), engine.now().replace(year=2100),
                                          session=session)
        return row


def _events(pagerduty: FakePagerDuty) -> list[tuple[str, str]]:
    return [(e["event_action"], e["dedup_key"]) for e in pagerduty.events]


def _slack(engine) -> list[tuple[str, bool]]:
    return [(key, resolve) for _kind, key, _summary, resolve in engine.notifier.alerts]


def test_a_trigger_and_its_resolve_reach_both_channels_once(engine, pagerduty):
    assert raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    assert resolve_alert(engine, KEY, "#7 GPU 0 back to 70 °C")
    assert _events(pagerduty) == [("trigger", KEY), ("resolve", KEY)]
    assert _slack(engine) == [(KEY, False), (KEY, True)]
    assert (_row(engine).paged, _row(engine).pager_due_at) == ("resolve", None)
    assert redeliver(engine) == 0


def test_a_trigger_pagerduty_missed_is_sent_again_to_pagerduty_only(engine, pagerduty, clock):
    pagerduty.inject("status", status=503, times=3)  # one call's worth of retries
    raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    assert _events(pagerduty) == [] and _row(engine).pager_due_at is not None
    assert redeliver(engine) == 0, "not before its backoff"
    clock.advance(seconds=31)
    assert redeliver(engine) == 1
    assert _events(pagerduty) == [("trigger", KEY)]
    assert _slack(engine) == [(KEY, False)], "the redelivery must not post the alert to Slack again"
    clock.advance(minutes=10)
    assert redeliver(engine) == 0


def test_a_failed_resolve_is_sent_again_with_backoff_until_it_gets_through(engine, pagerduty, clock):
    raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    pagerduty.inject("status", status=500, times=6)  # this resolve and the next redelivery fail
    resolve_alert(engine, KEY, "cooled")
    assert _row(engine).pager_due_at - clock() == timedelta(seconds=30)
    clock.advance(seconds=31)
    assert redeliver(engine) == 1
    assert _row(engine).pager_due_at - clock() == timedelta(seconds=60) and _row(engine).pager_attempts == 2
    clock.advance(seconds=61)
    assert redeliver(engine) == 1
    assert _events(pagerduty) == [("trigger", KEY), ("resolve", KEY)] and _row(engine).paged == "resolve"
    assert _slack(engine) == [(KEY, False), (KEY, True)]


def test_a_400_is_final(engine, pagerduty, clock):
    engine.pager = PagerDuty("not-the-routing-key", pagerduty.url, sleep=lambda _s: None, timeout=2)
    raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    row = _row(engine)
    assert row.pager_error and row.pager_due_at is None and len(pagerduty.requests) == 1
    clock.advance(hours=1)
    resolve_alert(engine, KEY, "cooled")
    assert redeliver(engine) == 0 and len(pagerduty.requests) == 1
    assert _slack(engine) == [(KEY, False), (KEY, True)], "Slack still tells on-call"


def test_an_alert_resolved_before_its_trigger_got_through_needs_nothing_more(engine, pagerduty, clock):
    pagerduty.inject("status", status=502, times=3)
    raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    resolve_alert(engine, KEY, "cooled")
    clock.advance(minutes=5)
    assert redeliver(engine) == 1 and _events(pagerduty) == [] and _row(engine).pager_due_at is None
    assert redeliver(engine) == 0
