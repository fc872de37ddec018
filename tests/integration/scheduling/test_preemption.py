"""A spot machine taken back is a preemption, not a lost instance: the owner hears it and what it cost, billing
stops at the interruption, and the remaining time is booked again (or not, per `[spot] on_preempt`)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from gpubot.db import bookings as repo
from gpubot.db import ledger
from gpubot.domain.model import BookingState
from gpubot.providers.simulated.adapter import SimulatedCloud
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.preemption import preempted
from gpubot.scheduling.acquisition.queue import drain
from gpubot.scheduling.booking.booking import HOLDING, BookingAsk, book
from gpubot.scheduling.lifecycle.cost_check import check_provider_costs
from gpubot.scheduling.lifecycle.reconcile import reconcile
from gpubot.scheduling.metrics import PREEMPTIONS
from gpubot.scheduling.money.billing import instance_of
from gpubot.scheduling.money.costs import budget_lines

from tests.engine_kit import deliver, make_engine, simulated_policy

SPOT = {"kind": "simulated", "stock": [{"gpu": "a100", "region": "s-1", "count": 8, "price": 2.00,
                                        "spot_price": 0.80}]}


def _engine(database_url, clock, **spot):
    policy = simulated_policy(providers={"s": SPOT}, spot=spot)
    clouds = {name: SimulatedCloud(name, config, clock=lambda: clock().timestamp())
              for name, config in policy.enabled_providers().items()}
    return make_engine(database_url, policy, clock, providers=clouds)


def _running_spot(engine, hours: int = 6):
    booked = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=2, duration=timedelta(hours=hours),
                                     spot=True, note="llama sweep"))
    with engine.db.session() as session:  # its message was posted (as the delivery worker records it)
        repo.set_message(booked.booking.id, "CGPU", "1700000000.000100", session=session)
    booking = acquire(engine, booked.booking.id)
    assert booking.state == BookingState.ACTIVE and booking.provider == "s"
    return booking


def _load(engine, booking_id):
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session)


def _billed_seconds(engine, booking_id) -> int:
    with engine.db.session() as session:
        return sum(int((i.end - i.start).total_seconds()) for i in ledger.list_intervals(booking_id, session=session))


@pytest.fixture
def engine(database_url, clock):
    return _engine(database_url, clock)


def test_a_preempted_spot_booking_is_billed_to_the_interruption_and_resumes_for_its_remaining_time(engine, clock):
    booking = _running_spot(engine)
    deliver(engine)
    assert "spot: the provider may take it back at any time; save checkpoints." in engine.notifier.dms[-1][1]
    before = PREEMPTIONS.labels("s")._value.get()
    clock.advance(hours=2)
    reconcile(engine)  # billed while it runs
    clock.advance(minutes=30)
    engine.providers["s"].preempt(booking.instance_id)
    clock.advance(minutes=4)  # the next pass finds it

    report = reconcile(engine)

    assert report.preempted == [booking.id] and report.lost == [] and report.orphans == []
    deliver(engine)
    assert engine.notifier.alerts == []  # no instance_lost (nor any) page
    assert PREEMPTIONS.labels("s")._value.get() == before + 1
    closed = _load(engine, booking.id)
    assert closed.state == BookingState.RELEASED and closed.released_at == booking.started_at + timedelta(hours=2.5)
    assert _billed_seconds(engine, booking.id) == 2.5 * 3600  # not the 4 minutes until it was noticed
    resumed = _load(engine, booking.id + 1)
    assert resumed.state == BookingState.QUEUED and resumed.state in HOLDING
    assert (resumed.gpu, resumed.count, resumed.spot, resumed.duration) == ("a100", 2, True, timedelta(hours=3.5))
    assert resumed.note == f"resumes #{booking.id}: llama sweep"
    assert (resumed.channel, resumed.message_ts) == ("CGPU", "1700000000.000100")  # the same Slack message
    assert resumed.estimate == Decimal("5.60")  # budgets hold the rest: 2 GPUs × 3.5 h × $0.80
    with engine.db.session() as session:
        team = next(line for line in budget_lines(engine, "UALICE", None, session=session) if line.scope == "team")
    assert (team.spent, team.committed) == (Decimal("4.00"), Decimal("5.60"))
    deliver(engine)
    owner, text = engine.notifier.dms[-1]
    assert owner == "UALICE" and f"#{booking.id} was interrupted: s took back its spot machine" in text
    assert "after 2h30m. It cost $4.00 so far" in text  # 2 GPUs × 2.5 h × $0.80
    assert f"#{resumed.id} resumes it for the remaining 3h30m" in text

    clock.advance(seconds=5)
    drain(engine)

    landed = _load(engine, resumed.id)
    assert landed.state == BookingState.ACTIVE and landed.ends_at == clock() + timedelta(hours=3.5)
    deliver(engine)
    assert engine.notifier.dms[-1][1].startswith(f"#{resumed.id} is ready")
    assert "save checkpoints" in engine.notifier.dms[-1][1]
    again = reconcile(engine)
    assert (again.preempted, again.lost, again.kept) == ([], [], 1)
    assert _billed_seconds(engine, booking.id) == 2.5 * 3600


def test_notify_ends_the_booking_and_books_nothing_again(database_url, clock):
    engine = _engine(database_url, clock, on_preempt="notify")
    booking = _running_spot(engine)
    clock.advance(hours=1)
    engine.providers["s"].preempt(booking.instance_id)
    clock.advance(minutes=5)

    assert reconcile(engine).preempted == [booking.id]

    assert _load(engine, booking.id).state == BookingState.RELEASED
    assert _load(engine, booking.id + 1) is None
    assert _billed_seconds(engine, booking.id) == 3600
    deliver(engine)
    text = engine.notifier.dms[-1][1]
    assert "It cost $1.60 so far" in text and 'It has ended ([spot] on_preempt = "notify")' in text
    deliver(engine)
    assert engine.notifier.alerts == []
    assert engine.providers["s"].list_owned() == []  # what the vendor kept was deleted


def test_too_little_left_is_not_booked_again(engine, clock):
    booking = _running_spot(engine, hours=1)
    clock.advance(minutes=55)
    engine.providers["s"].preempt(booking.instance_id)

    reconcile(engine)

    assert _load(engine, booking.id + 1) is None
    deliver(engine)
    assert "Only 5m of it was left, so it has ended" in engine.notifier.dms[-1][1]


def test_a_describe_that_sees_the_preemption_first_settles_it_once(engine, clock):
    booking = _running_spot(engine)
    clock.advance(hours=1)
    engine.providers["s"].preempt(booking.instance_id)
    seen = engine.providers["s"].describe(instance_of(booking))
    assert (seen.status, seen.ready, seen.stopped_at) == ("preempted", False, clock())
    clock.advance(minutes=1)

    resumed = preempted(engine, booking, seen)

    assert resumed is not None and resumed.duration == timedelta(hours=5)
    assert preempted(engine, booking, seen) is None  # a second look changes nothing
    assert reconcile(engine).preempted == []
    deliver(engine)
    assert [t for _u, t in engine.notifier.dms].count(next(t for _u, t in engine.notifier.dms
                                                           if "was interrupted" in t)) == 1


def test_an_interrupted_machine_returns_its_gpus_and_costs_nothing_more(engine, clock):
    booking = _running_spot(engine)
    cloud = engine.providers["s"]
    clock.advance(hours=1)
    cloud.preempt(booking.instance_id)
    clock.advance(hours=1)
    assert cloud.run_seconds(booking.instance_id) == 3600
    assert cloud.offers(booking.request())[0].available
    reconcile(engine)
    assert _billed_seconds(engine, booking.id) == 3600
    with engine.db.session() as session:
        spent = sum((i.price_per_gpu_hour * i.count * Decimal((i.end - i.start).total_seconds()) / 3600
                     for i in ledger.list_intervals(booking.id, session=session)), Decimal(0))
    assert spent == Decimal("1.60")


def test_the_cost_check_that_describes_it_first_settles_the_preemption(engine, clock):
    booking = _running_spot(engine)
    clock.advance(minutes=40)
    engine.providers["s"].preempt(booking.instance_id)
    clock.advance(minutes=2)

    assert check_provider_costs(engine) == []  # a stopped machine's cost is no disagreement

    assert _load(engine, booking.id).state == BookingState.RELEASED
    assert _load(engine, booking.id + 1).state == BookingState.QUEUED
    assert _billed_seconds(engine, booking.id) == 40 * 60
    assert reconcile(engine).preempted == []
