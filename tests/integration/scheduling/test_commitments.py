"""Every held booking counts against budgets, decided and held atomically, checked again at launch (issue #17),
on the real ledger (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from gpubot.db import bookings as repo
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.errors import NoCapacity, Refused
from gpubot.domain.model import BookingState
from gpubot.domain.money import CENT
from gpubot.domain.ports import GpuReading
from gpubot.providers.registry import policy_from_dict
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.queue import drain, start_now
from gpubot.scheduling.booking.admin import set_budget
from gpubot.scheduling.booking.booking import BookingAsk, book, extend, release
from gpubot.scheduling.desk import approvals
from gpubot.scheduling.desk.replace import replace_booking
from gpubot.scheduling.lifecycle.health import check_health
from gpubot.scheduling.money.billing import accrue
from gpubot.scheduling.money.reports import budget_lines_for, budget_statuses, cost_report

from tests.engine_kit import deliver, make_engine

ONE_CLOUD = {"sim": {"kind": "simulated", "stock": [{"gpu": "a100", "region": "sim-1", "count": 8, "price": 2}]}}


def _engine(database_url, clock, mode: str = "block", monthly: float = 20, providers: dict = ONE_CLOUD,
            **sections):
    raw = {"team": {"admins": ["UADMIN"]}, "budget": {"monthly": monthly, "over_budget": mode},
           "providers": providers, **sections}
    return make_engine(database_url, policy_from_dict(raw), clock)


def _ask(owner: str = "UALICE", hours: int = 8, count: int = 1, at=None, **changes) -> BookingAsk:
    return BookingAsk(owner=owner, gpu="a100", count=count, duration=timedelta(hours=hours), start_at=at, **changes)


def _load(engine, booking_id: int):
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session)


def _team(engine):
    return next(line for line in budget_lines_for(engine, "UALICE") if line.scope == "team")


def test_scheduled_bookings_hold_their_estimate_so_the_second_is_refused(database_url, clock):
    engine = _engine(database_url, clock)
    first = book(engine, _ask(at=clock() + timedelta(hours=2)))  # a100x1 8h at $2 = $16
    assert first.booking.state == BookingState.SCHEDULED and first.booking.estimate == Decimal(16)
    with pytest.raises(Refused) as refused:
        book(engine, _ask(at=clock() + timedelta(hours=3)))
    assert "team would reach $32.00 of $20.00" in str(refused.value) and "already booked" in str(refused.value)
    assert _team(engine).projected == Decimal(16)
    with engine.db.session() as session:
        assert len(repo.list_bookings(session=session)) == 1


def test_every_non_final_state_counts_and_a_final_one_frees_its_hold(database_url, clock):
    engine = _engine(database_url, clock, mode="approve", monthly=100)
    states = [BookingState.REQUESTED, BookingState.AWAITING_APPROVAL, BookingState.SCHEDULED, BookingState.QUEUED,
              BookingState.ACQUIRING]
    ids = []
    for state in states:
        booked = book(engine, _ask(hours=1))
        with engine.db.session() as session:
            repo.set_fields(booked.booking.id, session=session, state=state.value)
        ids.append(booked.booking.id)
    assert _team(engine).committed == Decimal(2) * len(states)
    with engine.db.session() as session:
        repo.transition(ids[0], [BookingState.REQUESTED], BookingState.CANCELLED, session=session)
    assert _team(engine).committed == Decimal(2) * (len(states) - 1)


def test_a_budget_lowered_before_a_scheduled_start_refuses_it_at_launch(database_url, clock):
    engine = _engine(database_url, clock)
    booked = book(engine, _ask(at=clock() + timedelta(hours=1)))
    set_budget(engine, "team", Decimal(10), "UADMIN")
    clock.advance(hours=1)
    drain(engine)
    refused = _load(engine, booked.booking.id)
    assert refused.state == BookingState.FAILED and "over budget at launch" in refused.failure
    assert sum(p.calls["launch"] for p in engine.providers.values()) == 0, "nothing may launch"
    deliver(engine)
    (owner, told), = [dm for dm in engine.notifier.dms if "not launched" in dm[1]]
    assert owner == "UALICE" and "team would reach $16.00 of $10.00" in told and "refused" in told
    assert _team(engine).projected == 0


def test_a_booking_over_budget_in_approve_mode_asks_the_admins_in_its_own_transaction(database_url, clock):
    # Recorded and asked at once: a bot that dies before posting the booking's message loses no ask.
    engine = _engine(database_url, clock, mode="approve", monthly=10)
    booked = book(engine, _ask())
    assert booked.booking.state == BookingState.AWAITING_APPROVAL
    assert deliver(engine) >= 1
    (admin, asked), = [dm for dm in engine.notifier.dms if "over budget" in dm[1]]
    assert admin == "UADMIN" and asked.startswith(f"<@UALICE>'s #{booked.booking.id} (1× a100 for 8h) is over budget")
    assert engine.notifier.dm_actions[-1] == ["booking_approve", "booking_deny"]


def test_in_approve_mode_it_waits_for_an_admin_and_once_approved_launches_without_a_second_check(database_url,
                                                                                                 clock):
    engine = _engine(database_url, clock, mode="approve")
    booked = book(engine, _ask(at=clock() + timedelta(hours=1)))
    set_budget(engine, "team", Decimal(10), "UADMIN")
    clock.advance(hours=1)
    drain(engine)
    assert _load(engine, booked.booking.id).state == BookingState.AWAITING_APPROVAL
    deliver(engine)
    asked = [i for i, (who, text) in enumerate(engine.notifier.dms) if who == "UADMIN" and "over budget" in text]
    assert asked and engine.notifier.dm_actions[asked[0]] == ["booking_approve", "booking_deny"]
    assert _team(engine).committed == Decimal(16), "a booking awaiting approval still holds its estimate"
    approved = approvals.approve(engine, booked.booking.id, "UADMIN")
    assert approved.state == BookingState.ACTIVE and _load(engine, approved.id).approved_by == "UADMIN"
    deliver(engine)
    assert ("UALICE", f"#{approved.id} was approved by <@UADMIN>; acquiring now.") in engine.notifier.dms
    deliver(engine)
    assert (approved.id, "", "Approved by <@UADMIN>.") in engine.notifier.updates


def test_a_denial_is_told_once_though_clicked_twice_and_delivered_again(database_url, clock):
    engine = _engine(database_url, clock, mode="approve")
    booked = book(engine, _ask(at=clock() + timedelta(hours=1)))
    set_budget(engine, "team", Decimal(10), "UADMIN")
    clock.advance(hours=1)
    drain(engine)
    denied = approvals.deny(engine, booked.booking.id, "UADMIN")
    with pytest.raises(Refused, match="already decided"):
        approvals.deny(engine, booked.booking.id, "UADMIN")
    deliver(engine)
    assert deliver(engine) == 0
    told = [dm for dm in engine.notifier.dms if "denied" in dm[1]]
    assert told == [("UALICE", f"#{denied.id} was denied by <@UADMIN> (over budget).")]
    deliver(engine)
    assert [u for u in engine.notifier.updates if u[2].startswith("Denied")] == [
        (denied.id, "", "Denied by <@UADMIN>.")]
    assert _load(engine, denied.id).state == BookingState.CANCELLED and _team(engine).committed == 0


def test_a_price_rise_while_queued_is_caught_at_launch(database_url, clock):
    engine = _engine(database_url, clock, acquire={"offer_cache": 0})
    cloud = engine.providers["sim"]
    cloud.set_stock("a100", "sim-1", 0)
    booked = book(engine, _ask())
    assert start_now(engine, booked.booking).state == BookingState.QUEUED
    cloud.set_stock("a100", "sim-1", 8, price=Decimal(3))  # now $24 for the 8 h
    clock.advance(minutes=5)
    drain(engine)
    assert _load(engine, booked.booking.id).state == BookingState.FAILED
    assert cloud.calls["launch"] == 0


def test_a_fallback_offer_that_would_pass_the_budget_is_not_launched(database_url, clock):
    clouds = {"cheap": {"kind": "simulated", "stock": [{"gpu": "a100", "region": "c-1", "count": 8, "price": 2}]},
              "dear": {"kind": "simulated", "stock": [{"gpu": "a100", "region": "d-1", "count": 8, "price": 3}]}}
    engine = _engine(database_url, clock, providers=clouds, acquire={"offer_cache": 0})
    engine.providers["cheap"].fail_next(NoCapacity("cheap", "gone", "region", "c-1"))
    placed = start_now(engine, book(engine, _ask()).booking)  # $16 fits, the $24 fallback does not
    assert placed.state == BookingState.QUEUED and engine.providers["dear"].calls["launch"] == 0
    deliver(engine)
    assert any("dear d-1: over budget" in line for _id, _state, line in engine.notifier.updates)


def test_an_admin_and_warn_mode_go_ahead(database_url, clock):
    engine = _engine(database_url, clock)
    assert start_now(engine, book(engine, _ask(owner="UADMIN", hours=24)).booking).state == BookingState.ACTIVE
    warn = _engine(database_url, clock, mode="warn")
    assert start_now(warn, book(warn, _ask()).booking).state == BookingState.ACTIVE


def test_extensions_count_obey_the_limit_for_the_whole_booking_and_the_budget(database_url, clock):
    engine = _engine(database_url, clock, monthly=140, booking={"max_duration": "3d"})
    running = start_now(engine, book(engine, _ask(hours=6)).booking)
    result = extend(engine, running.id, "UALICE", timedelta(hours=60))
    assert (result.extension.length, result.added_cost) == (timedelta(hours=66), Decimal(120))
    assert _load(engine, running.id).duration == timedelta(hours=66)
    with pytest.raises(Refused, match="over the 3d limit"):
        extend(engine, running.id, "UALICE", timedelta(hours=72))
    with pytest.raises(Refused, match=r"would cost \$10\.00 more, and team would reach \$142\.00 of \$140\.00"):
        extend(engine, running.id, "UALICE", timedelta(hours=5))
    assert _team(engine).projected == Decimal(132)
    admin = extend(engine, running.id, "UADMIN", timedelta(hours=72))
    assert admin.extension.past_limit and [(p.scope, p.reach, p.limit) for p in admin.over_budget] == [
        ("team", Decimal(276), Decimal(140))]  # the budget it passed, as facts the bot words
    assert _load(engine, running.id).duration == timedelta(hours=138)


def test_one_request_key_extends_once_and_a_refused_one_can_be_tried_again(database_url, clock):
    engine = _engine(database_url, clock, monthly=30)
    running = start_now(engine, book(engine, _ask(hours=4)).booking)  # $8
    first = extend(engine, running.id, "UALICE", timedelta(hours=1), request_key="click:1")
    again = extend(engine, running.id, "UALICE", timedelta(hours=1), request_key="click:1")
    assert not first.repeat and again.repeat and again.booking.ends_at == first.booking.ends_at
    with pytest.raises(Refused):
        extend(engine, running.id, "UALICE", timedelta(hours=20), request_key="click:2")  # $40 more: blocked
    set_budget(engine, "team", Decimal(100), "UADMIN")
    assert not extend(engine, running.id, "UALICE", timedelta(hours=20), request_key="click:2").repeat


def test_running_bookings_count_live_in_cost_and_budget_and_the_forecast(database_url, clock):
    engine = _engine(database_url, clock, monthly=1000)
    running = start_now(engine, book(engine, _ask(hours=8, count=2)).booking)
    clock.advance(minutes=30)
    report = cost_report(engine, clock() - timedelta(days=1), clock(), "user")
    assert report.total.spend.quantize(CENT) == Decimal("2.00")  # 2 GPUs × 30 min × $2, nothing accrued yet
    (team,) = [s for s in budget_statuses(engine) if s.scope == "team"]
    assert (team.spent, team.committed) == (Decimal(2), Decimal(30)) and team.forecast >= Decimal(32)
    accrue(engine, running)
    clock.advance(minutes=15)
    (team,) = [s for s in budget_statuses(engine) if s.scope == "team"]
    assert (team.spent, team.committed) == (Decimal(3), Decimal(29)), "accrued $2 + live $1, and $29 to come"
    release(engine, running.id, "UALICE")
    (team,) = [s for s in budget_statuses(engine) if s.scope == "team"]
    assert (team.spent, team.committed) == (Decimal(3), Decimal(0))


def test_two_engines_booking_at_once_never_pass_the_budget_together(database_url, clock):
    import threading

    engines = [_engine(database_url, clock, monthly=50) for _ in range(2)]
    gate = threading.Barrier(8)
    outcomes: list[str] = []

    def one(i: int) -> None:
        gate.wait()
        try:
            book(engines[i % 2], _ask(owner=f"U{i}", at=clock() + timedelta(hours=1)))
            outcomes.append("booked")
        except Refused:
            outcomes.append("refused")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["booked"] * 3 + ["refused"] * 5  # $16 each against $50
    assert _team(engines[0]).projected == Decimal(48)


def test_acquire_of_a_cancelled_booking_holds_nothing(database_url, clock):
    engine = _engine(database_url, clock)
    booked = book(engine, _ask())
    with engine.db.session() as session:
        repo.transition(booked.booking.id, [BookingState.REQUESTED], BookingState.CANCELLED, session=session)
    assert acquire(engine, booked.booking.id).state == BookingState.CANCELLED
    assert _team(engine).projected == 0


def test_replace_needs_an_open_overheat_alert_and_stretches_the_gpu_limit_by_the_hot_gpus(database_url, clock):
    clouds = {name: {"kind": "simulated", "telemetry": False,
                     "stock": [{"gpu": "a100", "region": f"{name}-1", "count": 16, "price": 2}]}
              for name in ("sim", "alt")}
    engine = _engine(database_url, clock, monthly=10000, providers=clouds, booking={"max_gpus_per_user": 16})
    hot = start_now(engine, book(engine, _ask(count=8, hours=2)).booking)
    start_now(engine, book(engine, _ask(count=8, hours=2)).booking)
    with pytest.raises(Refused, match="no open overheat alert"):
        replace_booking(engine, hot.id, "UALICE")
    with engine.db.session() as session:
        assert len(repo.list_bookings(session=session)) == 2
        telemetry_repo.add_samples(hot.id, [GpuReading(0, 90.0, 97.0)], clock(), session=session)
    clock.advance(seconds=engine.policy.health.for_.total_seconds())  # hot for the whole `for` window
    with engine.db.session() as session:
        telemetry_repo.add_samples(hot.id, [GpuReading(0, 90.0, 97.0)], clock(), session=session)
    check_health(engine)
    replacement = replace_booking(engine, hot.id, "UALICE")  # 16 held + 8: allowed, by exactly the hot 8
    assert start_now(engine, replacement.booking).state == BookingState.ACTIVE
    with pytest.raises(Refused, match="hold or wait for 24 GPUs"):
        book(engine, _ask(count=1))
    release(engine, hot.id, "UALICE")
    with pytest.raises(Refused, match="hold or wait for 16 GPUs"):
        book(engine, _ask(count=1))
