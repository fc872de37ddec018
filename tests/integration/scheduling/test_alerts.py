"""On-call alerts through the outbox, over two channels — the alerts channel (the recording notifier) and
PagerDuty (its fake) — each delivered, and retried, on its own: a PagerDuty retry never posts to Slack again, a
failed resolve is sent again like a trigger, a 400 is never sent again, a resolve never overtakes its trigger,
and an alert resolved before its trigger left for PagerDuty pages nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gpubot.db import alerts as alert_repo
from gpubot.scheduling.alerts import raise_alert, resolve_alert
from gpubot.scheduling.delivery import FOLLOW_WAIT, deliver_due

from gpubot.pagerduty import PagerDuty
from gpubot.wiring import PagerChannel
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


def _deliver(engine) -> int:
    """Run the delivery worker over both channels until nothing is due; how many rows it claimed."""
    channels = {"slack": engine.notifier, "pagerduty": PagerChannel(engine.pager)}
    total = 0
    while claimed := deliver_due(engine, channels):
        total += claimed
    return total


def _events(pagerduty: FakePagerDuty) -> list[tuple[str, str]]:
    return [(e["event_action"], e["dedup_key"]) for e in pagerduty.events]


def _slack(engine) -> list[tuple[str, bool]]:
    return [(key, resolve) for _kind, key, _summary, resolve in engine.notifier.alerts]


def test_a_trigger_and_its_resolve_reach_both_channels_once(engine, pagerduty):
    assert raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    assert not raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 92 °C"), "one open alert per key"
    assert _deliver(engine) == 2
    assert resolve_alert(engine, KEY, "#7 GPU 0 back to 70 °C") and not resolve_alert(engine, KEY, "again")
    assert _deliver(engine) == 2 and _deliver(engine) == 0
    assert _events(pagerduty) == [("trigger", KEY), ("resolve", KEY)]
    assert _slack(engine) == [(KEY, False), (KEY, True)]
    with engine.db.session() as session:
        [row] = alert_repo.alerts_between(engine.now().replace(year=2000), engine.now().replace(year=2100),
                                          session=session)
    assert row.state == "resolved"


def test_a_trigger_pagerduty_missed_is_sent_again_to_pagerduty_only(engine, pagerduty, clock):
    pagerduty.inject("status", status=503, times=3)  # one call's worth of retries
    raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    _deliver(engine)
    assert _events(pagerduty) == [] and _slack(engine) == [(KEY, False)]
    assert _deliver(engine) == 0, "not before its backoff"
    clock.advance(seconds=2)
    assert _deliver(engine) == 1
    assert _events(pagerduty) == [("trigger", KEY)]
    assert _slack(engine) == [(KEY, False)], "the retry must not post the alert to Slack again"
    clock.advance(minutes=10)
    assert _deliver(engine) == 0


def test_a_failed_resolve_is_sent_again_with_backoff_until_it_gets_through(engine, pagerduty, clock):
    raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    _deliver(engine)
    pagerduty.inject("status", status=500, times=6)  # this resolve and its first retry fail
    resolve_alert(engine, KEY, "cooled")
    _deliver(engine)
    clock.advance(seconds=1)
    assert _deliver(engine) == 1, "the first retry, after 1 s"
    clock.advance(seconds=1)
    assert _deliver(engine) == 0, "the second waits 2 s"
    clock.advance(seconds=1)
    assert _deliver(engine) == 1
    assert _events(pagerduty) == [("trigger", KEY), ("resolve", KEY)]
    assert _slack(engine) == [(KEY, False), (KEY, True)]


def test_a_400_is_final(engine, pagerduty, clock):
    engine.pager = PagerDuty("not-the-routing-key", pagerduty.url, sleep=lambda _s: None, timeout=2)
    raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    _deliver(engine)
    assert len(pagerduty.requests) == 1
    clock.advance(hours=1)
    resolve_alert(engine, KEY, "cooled")
    _deliver(engine)
    clock.advance(hours=1)
    assert _deliver(engine) == 0 and len(pagerduty.requests) == 1, "no resolve for an incident never opened"
    assert _slack(engine) == [(KEY, False), (KEY, True)], "Slack still tells on-call"


def test_an_alert_resolved_before_its_trigger_got_through_pages_nothing(engine, pagerduty, clock):
    pagerduty.inject("status", status=502, times=3)
    raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    _deliver(engine)
    resolve_alert(engine, KEY, "cooled")
    clock.advance(minutes=5)
    _deliver(engine)
    clock.advance(minutes=5)
    assert _deliver(engine) == 0
    assert _events(pagerduty) == [] and len(pagerduty.requests) == 3
    assert _slack(engine) == [(KEY, False), (KEY, True)]


def test_a_resolve_waits_for_its_trigger_on_its_channel(engine, pagerduty, clock):
    engine.notifier.slack_down = True
    raise_alert(engine, "overheat", KEY, "#7 GPU 0 at 91 °C")
    _deliver(engine)
    resolve_alert(engine, KEY, "cooled")
    engine.notifier.slack_down = False
    _deliver(engine)  # Slack's resolve is due, its trigger waits for its retry: the resolve holds back
    assert _slack(engine) == [] and _events(pagerduty) == [("trigger", KEY), ("resolve", KEY)]
    clock.advance(seconds=1)
    _deliver(engine)
    assert _slack(engine) == [(KEY, False)]
    clock.advance(seconds=FOLLOW_WAIT.total_seconds())
    _deliver(engine)
    assert _slack(engine) == [(KEY, False), (KEY, True)]
