"""The acquisition loop on the real GCP adapter against the fake Compute Engine: zone by zone, then region by
region; a regional quota skips the region, GPUS_ALL_REGIONS skips all of GCP, a rate limit moves on."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState
from gpubot.providers.registry import policy_from_dict
from gpubot.providers.simulated.adapter import SimulatedCloud
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.booting import follow_booting
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.lifecycle.cost_check import check_provider_costs
from gpubot.scheduling.lifecycle.reconcile import reconcile

from tests.engine_kit import deliver, make_engine
from tests.fakes.gcp_api import FakeGcp
from tests.fakes.gcp_world import FakeError

ZONES = ["us-central1-a", "us-central1-b", "us-east1-b"]


@pytest.fixture
def fake() -> Iterator[FakeGcp]:
    server = FakeGcp("gpubot-test", ZONES, wait_cap=0.1, op_seconds=0.2, boot_seconds=0.1)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def engine(database_url, clock, fake: FakeGcp):
    # Google's client costs ~3 s of CPU to import: here, not at collection (tests/conftest.py, VENDOR_GROUPS).
    from google.auth.credentials import AnonymousCredentials
    from gpubot.providers.gcp.adapter import GcpCompute

    policy = policy_from_dict({
        "team": {"admins": ["UADMIN"], "alerts_channel": "CALERTS"},
        "acquire": {"strategy": "ordered", "order": ["gcp", "sim"]},
        "providers": {"gcp": {"kind": "gcp", "project": "gpubot-test", "zones": ZONES},
                      "sim": {"kind": "simulated", "stock": [{"gpu": "t4", "region": "sim-1", "price": 0.9}]}}})
    gcp = GcpCompute("gcp", policy.providers["gcp"], project="gpubot-test", credentials=AnonymousCredentials(),
                     api_endpoint=fake.url, poll_interval=0.05)
    return make_engine(database_url, policy, clock,
                       providers={"gcp": gcp, "sim": SimulatedCloud("sim", policy.providers["sim"])})


def place(engine, spot: bool = False) -> tuple:
    ask = BookingAsk(owner="UALICE", gpu="t4", count=1, duration=timedelta(hours=2), spot=spot)
    booking = book(engine, ask).booking
    placed = acquire(engine, booking.id)
    with engine.db.session() as session:
        tried = [(a.provider, a.region, a.outcome) for a in attempt_repo.recent_attempts(placed.id, session=session)]
    return placed, tried


def test_an_exhausted_zone_falls_back_to_the_next_zone_of_the_region(engine, fake: FakeGcp) -> None:
    fake.zone("us-central1-a").free["nvidia-tesla-t4"] = 0
    placed, tried = place(engine)
    assert placed.state == BookingState.BOOTING and (placed.provider, placed.region) == ("gcp", "us-central1")
    assert placed.instance_id.startswith("us-central1-b/gpubot-")
    assert tried == [("gcp", "us-central1", "no_capacity"), ("gcp", "us-central1", "launched")]
    assert fake.live_names() == {placed.instance_name}


def test_both_zones_exhausted_moves_to_the_next_region(engine, fake: FakeGcp) -> None:
    for zone in ("us-central1-a", "us-central1-b"):
        fake.zone(zone).free["nvidia-tesla-t4"] = 0
    placed, tried = place(engine)
    assert (placed.provider, placed.region) == ("gcp", "us-east1")
    assert [t[2] for t in tried] == ["no_capacity", "no_capacity", "launched"]


def test_a_regional_quota_skips_the_rest_of_the_region(engine, fake: FakeGcp) -> None:
    fake.world.quotas["us-central1", "NVIDIA_T4_GPUS"] = 0
    placed, tried = place(engine)
    assert (placed.provider, placed.region) == ("gcp", "us-east1")
    assert tried == [("gcp", "us-central1", "quota"), ("gcp", "us-east1", "launched")]
    deliver(engine)
    assert [a[0] for a in engine.notifier.alerts] == ["provider_quota"]


def test_the_global_gpu_quota_skips_all_of_gcp(engine, fake: FakeGcp) -> None:
    fake.world.quotas["global", "GPUS_ALL_REGIONS"] = 0
    placed, tried = place(engine)
    assert placed.provider == "sim"
    assert tried == [("gcp", "us-central1", "quota"), ("sim", "sim-1", "launched")]


def test_a_rate_limit_moves_on_without_hammering(engine, fake: FakeGcp) -> None:
    fake.zone("us-central1-a").sync_errors.append(FakeError(403, "rateLimitExceeded", "Rate Limit Exceeded"))
    placed, tried = place(engine)
    assert placed.provider == "sim"
    assert tried == [("gcp", "us-central1", "rate_limited"), ("sim", "sim-1", "launched")]


def until_active(engine, clock, booking_id: int, timeout: float = 10.0):
    """Follow the booting VM (as the boot_follow job does) until it is reachable."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        clock.advance(seconds=30)
        follow_booting(engine, only=[booking_id])
        with engine.db.session() as session:
            booking = repo.get_booking(booking_id, session=session)
        if booking.state == BookingState.ACTIVE:
            return booking
        time.sleep(0.1)
    raise AssertionError(f"#{booking_id} never became active")


def test_the_booting_vm_turns_active_with_its_ssh_line(engine, fake: FakeGcp, clock) -> None:
    placed, _tried = place(engine)
    active = until_active(engine, clock, placed.id)
    assert active.connect == "ssh gpubot@34.1.7.9"
    deliver(engine)
    assert any(text.startswith(f"#{placed.id} is ready") and "ssh gpubot@34.1.7.9" in text
               for _user, text in engine.notifier.dms)


def test_a_preempted_spot_vm_is_settled_as_a_preemption_not_as_lost(engine, fake: FakeGcp, clock) -> None:
    placed, _tried = place(engine, spot=True)
    placed = until_active(engine, clock, placed.id)
    assert placed.spot and placed.provider == "gcp"
    fake.world.delete_seconds = 30.0  # still stopping when reconciliation lists it
    fake.preempt(placed.instance_name)
    clock.advance(minutes=5)
    report = reconcile(engine)
    deliver(engine)
    assert report.preempted == [placed.id] and report.lost == [] and engine.notifier.alerts == []
    with engine.db.session() as session:
        assert repo.get_booking(placed.id, session=session).state == BookingState.RELEASED


def test_a_preempted_spot_vm_already_deleted_is_settled_when_described(engine, fake: FakeGcp, clock) -> None:
    placed, _tried = place(engine, spot=True)
    placed = until_active(engine, clock, placed.id)
    fake.preempt(placed.instance_name)
    with fake.world.lock:
        fake.world.instances[placed.instance_id.split("/")[0], placed.instance_name]["gone_at"] = 0.0
    assert fake.live_names() == set()  # Google deleted it (instanceTerminationAction DELETE)
    clock.advance(minutes=5)
    check_provider_costs(engine)  # describes the running bookings: the preemption operation names this VM
    with engine.db.session() as session:
        assert repo.get_booking(placed.id, session=session).state == BookingState.RELEASED
    deliver(engine)
    assert engine.notifier.alerts == []
