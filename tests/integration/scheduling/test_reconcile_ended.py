"""A RunPod pod whose container exits (EXITED: RunPod stops charging for its GPU) is no machine any more: the next
reconcile bills the booking up to the last time the pod was seen running, not on to now, closes it, deletes the
pod and tells the owner. Against the RunPod fake, whose container runs for real."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.db import ledger
from gpubot.domain.model import BookingState
from gpubot.providers.registry import policy_from_dict
from gpubot.providers.runpod.adapter import RunPod
from gpubot.providers.runpod.config import RunPodConfig
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.booting import follow_booting
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.lifecycle.reconcile import reconcile

from tests.engine_kit import deliver, make_engine
from tests.fakes.runpod_api import FakeRunPod

KEY = "runpod-key"


@pytest.fixture
def runpod_fake(clock):
    fake = FakeRunPod(KEY, clock=clock, provision_time=timedelta(seconds=20), start_time=timedelta(seconds=10))
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def engine(database_url, clock, runpod_fake):
    policy = policy_from_dict({"team": {"admins": ["UADMIN"], "alerts_channel": "CALERTS"},
                               "providers": {"runpod": {"kind": "runpod"}}})
    adapter = RunPod("runpod", RunPodConfig(), KEY, f"{runpod_fake.url}/v2", sleep=lambda s: None)
    return make_engine(database_url, policy, clock, providers={"runpod": adapter})


def _state(engine, booking_id: int):
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session)


def test_an_exited_pod_is_billed_to_when_it_was_last_seen_running_and_deleted(engine, clock, runpod_fake):
    booked = book(engine, BookingAsk(owner="UALICE", gpu="rtx4090", count=1, duration=timedelta(hours=6)))
    booking = acquire(engine, booked.booking.id)
    deadline = time.monotonic() + 20
    while _state(engine, booking.id).state != BookingState.ACTIVE and time.monotonic() < deadline:
        clock.advance(seconds=5)  # the follower's tick; the pod's sshd starts in real time
        follow_booting(engine)
        time.sleep(0.05)
    active = _state(engine, booking.id)
    assert active.state == BookingState.ACTIVE and active.instance_id in runpod_fake.machines

    clock.advance(hours=1)
    reconcile(engine)  # the pod is listed running: billed up to now
    seen_running = engine.now()
    runpod_fake.machines[active.instance_id].stop()  # its container's command ends: EXITED
    clock.advance(minutes=20)
    report = reconcile(engine)

    assert report.lost == [booking.id]
    closed = _state(engine, booking.id)
    with engine.db.session() as session:
        billed = ledger.list_intervals(booking.id, session=session)
    assert closed.state == BookingState.RELEASED
    assert billed[0].start == active.started_at and billed[-1].end == seen_running  # not the 20 minutes after
    assert runpod_fake.pods == {} and runpod_fake.runs[active.instance_id].terminated_at == engine.now()
    deliver(engine)  # the release's DM, from the outbox
    assert any("no longer runs it" in text for _user, text in engine.notifier.dms)
