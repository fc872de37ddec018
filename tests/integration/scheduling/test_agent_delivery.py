"""What the engine tells a machine about its agent, and how it answers the agent's pushes by booking state."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState
from gpubot.domain.ports import GpuReading
from gpubot.domain.telemetry import BOOKING_ENDED, TelemetryRejected
from gpubot.providers.registry import policy_from_dict
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.agent import AGENT_PATH, agent_interval, agent_launch, issue_agent_token
from gpubot.scheduling.booking.booking import BookingAsk, book, release
from gpubot.scheduling.lifecycle.idle import check_idle
from gpubot.scheduling.lifecycle.telemetry import pushing_booking, store_push

from tests.e2e.server_kit import as_shown
from tests.engine_kit import deliver, make_engine, simulated_policy

SHA = "ab" * 32
READING = GpuReading(0, 3.0, 40.0)


def _push(engine, token: str, readings: list[GpuReading] | None = None, batch_id: str | None = None) -> int:
    """What POST /api/telemetry does once the edge validated the body: the token's booking, then the store."""
    return store_push(engine, pushing_booking(engine, token), readings or [READING], batch_id)


@pytest.fixture
def engine(database_url, clock):
    made = make_engine(database_url, simulated_policy(), clock)
    made.public_url, made.agent_sha256 = "https://gpubot.example.com/", SHA
    return made


def test_every_launch_carries_the_agent_and_the_line_to_start_it_comes_only_when_nothing_arrived(engine, clock
                                                                                                 ) -> None:
    policy = simulated_policy(providers={"a": {"kind": "simulated", "start_command": "python serve.py",
                                               "stock": [{"gpu": "a100", "region": "a-1", "count": 8,
                                                          "price": 1.0}]}})
    engine.policy = policy
    booking = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=1, duration=timedelta(hours=1)))
    acquire(engine, booking.booking.id)
    [spec] = engine.providers["a"].launch_specs
    assert spec.start_command == "python serve.py"
    assert (spec.agent.bot_url, spec.agent.download_url, spec.agent.sha256) == (
        "https://gpubot.example.com", "https://gpubot.example.com" + AGENT_PATH, SHA)
    assert spec.agent.token.startswith("gpa_") and len(spec.agent.token) == 36
    deliver(engine)
    ready = next(text for _user, text in engine.notifier.dms if "is ready" in text)
    assert "GPU telemetry (for idle and temperature checks) is on its way" in ready and "within 5m" in ready
    assert "sha256sum" not in ready and "GPUBOT_AGENT_TOKEN" not in ready  # the line comes only if nothing arrives
    clock.advance(minutes=6)  # nothing heard for telemetry_stale_after since it became reachable
    check_idle(engine)
    deliver(engine)
    [stale] = [as_shown(text) for _user, text in engine.notifier.dms if "has sent no GPU telemetry" in text]
    line = re.search(r"starts it: `(.+?)`", stale).group(1)  # copyable as Slack shows it: `&&`, `2>&1` as typed
    assert line.startswith("curl -fsSL --max-time 60 -o gpubot-agent.py https://gpubot.example.com/agent/")
    assert f"&& echo '{SHA}  gpubot-agent.py' | sha256sum -c - && (GPUBOT_AGENT_TOKEN=gpa_" in line
    assert line.endswith(">gpubot-agent.log 2>&1 &)")
    # The DM carries a token of its own (the replica that sends it may not be the one that launched); both push
    # for the booking.
    dm_token = re.search(r"GPUBOT_AGENT_TOKEN=(gpa_\S+) ", line).group(1)
    assert dm_token != spec.agent.token and len(dm_token) == 36
    assert _push(engine, spec.agent.token) == _push(engine, dm_token) == 1


def test_an_agent_that_pushes_in_time_means_no_line_at_all(engine, clock) -> None:
    booking = acquire(engine, book(engine, BookingAsk(owner="UALICE", gpu="a100", count=1,
                                                      duration=timedelta(hours=1))).booking.id)
    with engine.db.session() as session:
        token = issue_agent_token(booking.id, session=session)
    for _ in range(8):  # a minute apart, well within telemetry_stale_after (5m)
        clock.advance(minutes=1)
        _push(engine, token)
        check_idle(engine)
    deliver(engine)
    assert not [text for _user, text in engine.notifier.dms if "sha256sum" in text or "no GPU telemetry" in text]


def test_without_a_served_agent_no_agent_is_sent(engine) -> None:
    engine.agent_sha256 = None
    assert agent_launch(engine, "gpa_x") is None


@pytest.mark.parametrize(("idle", "stale", "seconds"), [("10m", "5m", 15.0), ("3s", "30s", 1.0), ("20s", "1m", 5.0)])
def test_the_push_interval_follows_the_shortest_window_that_reads_it(idle: str, stale: str, seconds: float) -> None:
    policy = policy_from_dict({"idle": {"for": idle}, "health": {"telemetry_stale_after": stale}})
    assert agent_interval(policy) == seconds


def test_pushes_are_stored_while_active_told_to_wait_while_booting_and_refused_once_ended(engine) -> None:
    booking = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=1, duration=timedelta(hours=1))).booking
    with engine.db.session() as session:
        repo.transition(booking.id, [BookingState.REQUESTED], BookingState.ACQUIRING, session=session)
        token = issue_agent_token(booking.id, session=session)
    with pytest.raises(TelemetryRejected) as early:
        _push(engine, token)
    assert early.value.status == 409  # the machine booted before the engine saw it ready: keep pushing
    with engine.db.session() as session:
        repo.transition(booking.id, [BookingState.ACQUIRING], BookingState.ACTIVE, session=session,
                        started_at=engine.now(), ends_at=engine.now() + timedelta(hours=1), provider="a",
                        region="a-1", instance_id="i-1")
    assert _push(engine, token) == 1
    release(engine, booking.id, "UALICE")
    with pytest.raises(TelemetryRejected) as ended:
        _push(engine, token)
    assert (ended.value.status, ended.value.reason) == (401, BOOKING_ENDED)  # the agent stops on this one only
    for wrong in ("gpa_unknown", ""):
        with pytest.raises(TelemetryRejected) as unknown:
            _push(engine, wrong)
        assert (unknown.value.status, unknown.value.reason) == (401, "unknown_token")  # the agent tries again


def test_every_token_a_ready_dm_gave_works_until_the_booking_ends(engine) -> None:
    """A ready DM whose delivery was in doubt (Slack stored it, the answer never came) is looked up and not posted
    again, but the retry minted another token: the one the owner sees must keep working."""
    booking = acquire(engine, book(engine, BookingAsk(owner="UALICE", gpu="a100", count=1,
                                                      duration=timedelta(hours=1))).booking.id)
    with engine.db.session() as session:
        shown = issue_agent_token(booking.id, session=session, for_dm=True)  # the attempt Slack stored
    with engine.db.session() as session:
        retried = issue_agent_token(booking.id, session=session, for_dm=True)  # the in-doubt retry's
    assert shown != retried
    assert _push(engine, shown) == _push(engine, retried) == 1
    release(engine, booking.id, "UALICE")
    for token in (shown, retried):
        with pytest.raises(TelemetryRejected) as ended:
            _push(engine, token)
        assert (ended.value.status, ended.value.reason) == (401, BOOKING_ENDED)


def test_a_token_speaks_only_for_the_gpus_its_booking_rents_and_a_resent_batch_counts_once(engine) -> None:
    booking = acquire(engine, book(engine, BookingAsk(owner="UALICE", gpu="a100", count=2,
                                                      duration=timedelta(hours=1))).booking.id)
    with engine.db.session() as session:
        token = issue_agent_token(booking.id, session=session)
    with pytest.raises(TelemetryRejected) as beyond:
        _push(engine, token, [GpuReading(i, 5.0, 40.0) for i in range(3)])
    assert (beyond.value.status, str(beyond.value)) == (422, "GPU index 2 is beyond this booking's 2 GPU(s)")
    two = [GpuReading(i, 5.0, 40.0) for i in range(2)]
    assert _push(engine, token, two, "b-1") == 2
    assert _push(engine, token, two, "b-1") == 0


def test_pushes_within_one_agent_interval_are_one_sample_per_gpu(engine, clock) -> None:
    """A replay without batch_id, or a flood the rate limit let through, stores nothing more."""
    from gpubot.db import telemetry as telemetry_repo

    booking = acquire(engine, book(engine, BookingAsk(owner="UALICE", gpu="a100", count=2,
                                                      duration=timedelta(hours=1))).booking.id)
    with engine.db.session() as session:
        token = issue_agent_token(booking.id, session=session)
    two = [GpuReading(i, 5.0, 40.0) for i in range(2)]
    for _ in range(5):
        _push(engine, token, two)
    clock.advance(seconds=agent_interval(engine.policy))
    _push(engine, token, two)
    with engine.db.session() as session:
        stored = telemetry_repo.samples_of([booking.id], clock() - timedelta(hours=1), session=session)[booking.id]
    assert len(stored) == 4  # two GPUs × two intervals
