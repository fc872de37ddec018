"""The acquisition loop over a real RunPod adapter and its fake: each answer of the create table does what the
table says — 402 stops every RunPod candidate and pages on-call, 403 skips only the candidate it names."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from db import attempts as attempt_repo
from domain.model import BookingState
from domain.policy import policy_from_dict
from providers.runpod import RunPod
from scheduling.acquire import acquire
from scheduling.booking import BookingAsk, book
from tests.engine_kit import make_engine
from tests.fakes.runpod_api import FakeRunPod

POLICY = {"team": {"admins": ["UADMIN"], "alerts_channel": "CALERTS"},
          "providers": {"runpod": {"kind": "runpod", "regions": ["EU-RO-1", "US-TX-3"]}}}


@pytest.fixture
def runpod() -> Iterator[FakeRunPod]:
    fake = FakeRunPod("rk")
    fake.start()
    yield fake
    fake.stop()


def _engine(database_url, clock, fake: FakeRunPod):
    policy = policy_from_dict(POLICY)
    adapter = RunPod("runpod", policy.providers["runpod"], "rk", f"{fake.url}/v2", sleep=lambda _s: None)
    return make_engine(database_url, policy, clock, providers={"runpod": adapter})


def _placed(engine, fake: FakeRunPod):
    booked = book(engine, BookingAsk(owner="UALICE", gpu="h100", count=1, duration=timedelta(hours=2)))
    booking = acquire(engine, booked.booking.id)
    with engine.db.session() as session:
        outcomes = [a.outcome for a in attempt_repo.recent_attempts(booking.id, session=session)]
    return booking, outcomes, [r for r in fake.requests if r.method == "POST" and r.path == "/v2/pods"]


def test_insufficient_balance_stops_runpod_and_pages_once(database_url, clock, runpod: FakeRunPod):
    engine = _engine(database_url, clock, runpod)
    runpod.balance_exhausted = True
    booking, outcomes, creates = _placed(engine, runpod)
    assert booking.state == BookingState.QUEUED
    assert outcomes == ["quota"] and len(creates) == 1, "no other RunPod candidate may be tried after a 402"
    [alert] = [a for a in engine.notifier.alerts if a[0] == "provider_quota"]
    assert "insufficient balance" in alert[2]


def test_no_access_to_one_pool_moves_to_the_next_candidate(database_url, clock, runpod: FakeRunPod):
    engine = _engine(database_url, clock, runpod)
    runpod.denied_gpus.add("NVIDIA H100 PCIe")  # the cheapest H100 on RunPod, offered in both data centres
    booking, outcomes, creates = _placed(engine, runpod)
    assert booking.state == BookingState.ACTIVE and outcomes == ["no_access", "no_access", "launched"]
    assert [(c.json()["gpu"]["id"], c.json()["dataCenterIds"]) for c in creates] == [
        ("NVIDIA H100 PCIe", ["EU-RO-1"]), ("NVIDIA H100 PCIe", ["US-TX-3"]), ("NVIDIA H100 80GB HBM3", ["EU-RO-1"])]
    assert engine.notifier.alerts == []
    assert any("no access to that pool" in line for _id, _state, line in engine.notifier.updates)
