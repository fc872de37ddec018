"""Following a booting machine on a real ledger, with the controllable clock and simulated clouds that boot:
ready after some polls, the ready DM once, timeouts that fall back to the next provider, release, expiry,
describe errors and machines that vanish while booting."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.db import ledger
from gpubot.domain.errors import Transient
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import BookingReady
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.booting import follow_booting
from gpubot.scheduling.booking.booking import BookingAsk, book, cancel, release
from gpubot.scheduling.delivery import LEASE
from gpubot.scheduling.lifecycle.expiry import expire_due

from tests.engine_kit import deliver, make_engine, simulated_policy

TICK = 5  # seconds, the default scheduler tick: the follower job runs this often


def _sim(region: str, price: float, **options) -> dict:
    return {"kind": "simulated", "stock": [{"gpu": "a100", "region": region, "count": 8, "price": price}], **options}


def _engine(database_url, clock, a: dict | None = None, b: dict | None = None, **sections):
    providers = {"a": _sim("a-1", 1.5, **(a or {"boot_time": "90s"})), "b": _sim("b-1", 1.8, **(b or {})),
                 "c": {"kind": "simulated", "enabled": False}}
    return make_engine(database_url, simulated_policy(providers=providers, **sections), clock)


def _booked(engine, hours: int = 6, gpus: int = 4) -> Booking:
    return book(engine, BookingAsk(owner="UALICE", gpu="a100", count=gpus, duration=timedelta(hours=hours))).booking


def _load(engine, booking_id: int) -> Booking:
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session)


def _follow_until(engine, clock, booking_id: int, state: BookingState, limit: timedelta, delivering: bool = True
                  ) -> int:
    """Run the follower every tick until the booking is in `state` (or `limit` passed), and the delivery worker
    after it unless told not to; how many polls it made."""
    polls, waited = 0, timedelta(0)
    while _load(engine, booking_id).state != state and waited < limit:
        clock.advance(seconds=TICK)
        waited += timedelta(seconds=TICK)
        polls += follow_booting(engine)
        if delivering:  # the delivery worker's turn between two ticks: each poll's line reaches the message
            deliver(engine)
    return polls


def _ready_dms(engine, booking_id: int) -> list[str]:
    """The ready DMs its owner got, once the delivery worker had its turn (as the bot's thread would)."""
    deliver(engine)
    return [text for _user, text in engine.notifier.dms if text.startswith(f"#{booking_id} is ready")]


def _billed_seconds(engine, booking_id: int) -> dict[str, int]:
    with engine.db.session() as session:
        intervals = ledger.list_intervals(booking_id, session=session)
    seconds: dict[str, int] = {}
    for i in intervals:
        seconds[i.provider] = seconds.get(i.provider, 0) + int((i.end - i.start).total_seconds())
    return seconds


def test_a_booting_machine_is_followed_until_ready_then_its_owner_gets_the_dm_once(database_url, clock):
    engine = _engine(database_url, clock)
    booking = acquire(engine, _booked(engine).id)
    launched_at = clock()
    assert booking.state == BookingState.BOOTING and booking.connect is None
    assert booking.started_at == launched_at and booking.ends_at == launched_at + timedelta(hours=6)
    deliver(engine)
    assert engine.notifier.updates[-1][2] == "booting on a a-1 · 0s"
    assert _ready_dms(engine, booking.id) == []

    polls = _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=5))

    ready = _load(engine, booking.id)
    assert ready.state == BookingState.ACTIVE and ready.connect == f"ssh gpu@{ready.instance_name}.sim.gpubot.local"
    assert timedelta(seconds=90) <= ready.ready_at - launched_at <= timedelta(seconds=90 + 30 + TICK)
    assert 5 <= polls == ready.boot_polls == engine.providers["a"].calls["describe"] <= 8
    deliver(engine)
    booting_lines = [line for _id, state, line in engine.notifier.updates if state == "booting"]
    assert booting_lines[-1].startswith("booting on a a-1 · 1m")
    last = engine.notifier.updates[-1][2]
    assert last.startswith("a a-1: ready after 1m") and f"({polls} checks)" in last
    dms = _ready_dms(engine, booking.id)
    assert len(dms) == 1 and f"Connect with `{ready.connect}`" in dms[0] and "it booted in 1m" in dms[0]
    clock.advance(minutes=5)
    follow_booting(engine)
    assert len(_ready_dms(engine, booking.id)) == 1
    release(engine, booking.id, "UALICE")
    assert _billed_seconds(engine, booking.id) == {"a": int((clock() - launched_at).total_seconds())}, \
        "billed from the launch, booting time included"


def test_a_machine_ready_at_launch_is_active_at_once_with_no_poll(database_url, clock):
    engine = _engine(database_url, clock, a={"boot_time": "0s"})
    booking = acquire(engine, _booked(engine).id)
    assert booking.state == BookingState.ACTIVE and booking.ready_at == booking.started_at == clock()
    assert engine.providers["a"].calls["describe"] == 0
    assert len(_ready_dms(engine, booking.id)) == 1
    deliver(engine)
    assert engine.notifier.updates[-1][2] == "a a-1: ready"


def test_a_describe_error_is_not_a_timeout(database_url, clock):
    engine = _engine(database_url, clock, a={"boot_time": "60s"})
    booking = acquire(engine, _booked(engine).id)
    for _ in range(3):
        engine.providers["a"].fail_next(Transient("a", "describe timed out"), call="describe")
    polls = _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=5))
    assert _load(engine, booking.id).state == BookingState.ACTIVE
    assert polls >= 4 and len(_ready_dms(engine, booking.id)) == 1


def test_a_machine_never_ready_is_terminated_billed_and_the_booking_lands_on_the_next_provider(database_url, clock):
    engine = _engine(database_url, clock, a={"never_ready": True}, acquire={"ready_timeout": "10m"})
    booking = acquire(engine, _booked(engine).id)
    first = booking.instance_name
    launched_at = clock()
    assert booking.state == BookingState.BOOTING and booking.provider == "a"

    _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=15))

    landed = _load(engine, booking.id)
    assert landed.state == BookingState.ACTIVE and landed.provider == "b"
    assert clock() - launched_at <= timedelta(minutes=10, seconds=TICK)
    assert landed.started_at == clock() and landed.ends_at == clock() + timedelta(hours=6)
    assert engine.providers["a"].list_owned() == [], "the machine that never became ready is terminated"
    assert _billed_seconds(engine, booking.id)["a"] == 600, "its ten minutes of booting are billed, no more"
    with engine.db.session() as session:
        outcomes = [(a.provider, a.outcome) for a in attempt_repo.recent_attempts(booking.id, session=session)]
        intent = attempt_repo.intents_by_name([first], session=session)[first]
    assert outcomes == [("a", "launched"), ("a", "not_ready"), ("b", "launched")]
    assert intent.state == "terminated"
    deliver(engine)
    told = [text for _user, text in engine.notifier.dms if "was not reachable after 10m" in text]
    assert len(told) == 1 and "Trying the next offer" in told[0]
    deliver(engine)
    assert any("was not reachable after 10m" in line and "b b-1" in line for _i, _s, line in engine.notifier.updates)
    assert len(_ready_dms(engine, booking.id)) == 1


def test_a_timeout_with_nothing_else_free_queues_and_in_the_end_gives_up(database_url, clock):
    engine = _engine(database_url, clock, a={"never_ready": True}, acquire={"ready_timeout": "10m",
                                                                             "give_up_after": "30m"})
    engine.providers["b"].set_stock("a100", "b-1", 0)
    booking = acquire(engine, _booked(engine).id)
    _follow_until(engine, clock, booking.id, BookingState.QUEUED, timedelta(minutes=15))
    queued = _load(engine, booking.id)
    assert queued.state == BookingState.QUEUED and queued.provider is None and queued.instance_name is None
    deliver(engine)
    assert any(line.startswith("Queued: a a-1 was not reachable") for _i, _s, line in engine.notifier.updates)


def test_release_while_booting_terminates_and_bills_the_booting_time(database_url, clock):
    engine = _engine(database_url, clock, a={"boot_time": "10m"})
    booking = acquire(engine, _booked(engine).id)
    _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=2))
    released = release(engine, booking.id, "UALICE")
    assert released.state == BookingState.RELEASED
    assert engine.providers["a"].list_owned() == []
    assert _billed_seconds(engine, booking.id) == {"a": 120}
    assert _ready_dms(engine, booking.id) == []
    clock.advance(minutes=10)
    assert follow_booting(engine) == 0 and _ready_dms(engine, booking.id) == []


def test_cancel_while_booting_is_a_release(database_url, clock):
    engine = _engine(database_url, clock, a={"boot_time": "10m"})
    booking = acquire(engine, _booked(engine).id)
    clock.advance(seconds=30)
    assert cancel(engine, booking.id, "UALICE").state == BookingState.RELEASED
    assert engine.providers["a"].list_owned() == [] and _billed_seconds(engine, booking.id) == {"a": 30}


def test_a_booking_whose_time_ends_while_booting_is_released(database_url, clock):
    engine = _engine(database_url, clock, a={"never_ready": True}, acquire={"ready_timeout": "3h"})
    booking = acquire(engine, _booked(engine, hours=1).id)
    clock.advance(hours=1)
    assert expire_due(engine) == 1
    done = _load(engine, booking.id)
    assert done.state == BookingState.RELEASED and engine.providers["a"].list_owned() == []
    assert _billed_seconds(engine, booking.id) == {"a": 3600}
    deliver(engine)
    assert any("before the machine became reachable" in text for _u, text in engine.notifier.dms)


def test_a_machine_that_vanishes_while_booting_is_billed_as_seen_and_the_next_offer_taken(database_url, clock):
    engine = _engine(database_url, clock, a={"boot_time": "10m"})
    booking = acquire(engine, _booked(engine).id)
    _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=1))
    seen = _billed_seconds(engine, booking.id)["a"]
    assert seen > 0
    engine.providers["a"].terminate(engine.providers["a"].list_owned()[0])  # the provider drops it
    _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=2))
    landed = _load(engine, booking.id)
    assert landed.state == BookingState.ACTIVE and landed.provider == "b"
    assert _billed_seconds(engine, booking.id)["a"] == seen, "billed up to the last poll that saw it booting"
    with engine.db.session() as session:
        outcomes = [a.outcome for a in attempt_repo.recent_attempts(booking.id, session=session)]
    assert outcomes == ["launched", "vanished", "launched"]
    deliver(engine)
    assert any("dropped the machine while it was booting" in text for _u, text in engine.notifier.dms)


@pytest.mark.parametrize("killed", ["before its delivery", "while Slack had it"])
def test_the_ready_dm_survives_a_kill_between_the_state_change_and_the_send(database_url, clock, killed):
    """Killed after the booking turned active (its DM owed in that same transaction), before the delivery worker
    took the DM or while it was handing it to Slack: the restarted engine delivers it, once."""
    engine = _engine(database_url, clock, a={"boot_time": "20s"})
    booking = acquire(engine, _booked(engine).id)
    _follow_until(engine, clock, booking.id, BookingState.ACTIVE, timedelta(minutes=2), delivering=False)
    notifier = engine.notifier
    if killed == "while Slack had it":
        notifier.deliver = _dies_on_ready(notifier)
        with pytest.raises(_Killed):
            deliver(engine)
        del notifier.deliver
    assert _load(engine, booking.id).state == BookingState.ACTIVE and notifier.dms == []
    restarted = make_engine(database_url, engine.policy, clock, providers=engine.providers)
    restarted.notifier = notifier
    clock.advance(seconds=LEASE.total_seconds() + 1)  # the dead worker's claim runs out
    follow_booting(restarted)
    assert len(_ready_dms(restarted, booking.id)) == 1
    assert len(_ready_dms(restarted, booking.id)) == 1, "delivered once, whatever runs again"


class _Killed(BaseException):
    """The process died (kill -9) at this point."""


def _dies_on_ready(notifier):
    deliver_now = notifier.deliver

    def dying(notice, in_doubt: bool = False, booking=None):
        if isinstance(notice, BookingReady):
            raise _Killed
        return deliver_now(notice, in_doubt=in_doubt, booking=booking)
    return dying


def test_a_spot_machine_taken_back_while_booting_is_settled_as_a_preemption(database_url, clock):
    spot = {"boot_time": "10m", "spot_interruptions_per_hour": 60, "seed": 1,
            "stock": [{"gpu": "a100", "region": "a-1", "count": 8, "price": 1.5, "spot_price": 0.5}]}
    engine = _engine(database_url, clock, a=spot)
    booked = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=4, duration=timedelta(hours=6), spot=True))
    booking = acquire(engine, booked.booking.id)
    assert booking.state == BookingState.BOOTING and booking.spot
    _follow_until(engine, clock, booking.id, BookingState.RELEASED, timedelta(minutes=10))
    taken = _load(engine, booking.id)
    assert taken.state == BookingState.RELEASED and taken.released_at < taken.started_at + timedelta(minutes=10)
    deliver(engine)
    assert any(text.startswith(f"#{booking.id} was interrupted") for _u, text in engine.notifier.dms)
    with engine.db.session() as session:
        resumed = repo.find_by_request_key(f"resume:{booking.id}", session=session)
        outcomes = [a.outcome for a in attempt_repo.recent_attempts(booking.id, session=session)]
    assert resumed is not None and resumed.state == BookingState.QUEUED, "its time is booked again"
    assert outcomes == ["launched"], "a preemption is not a failed launch"
