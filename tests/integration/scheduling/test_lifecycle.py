"""The life of a running booking on a real ledger with a controllable clock: idle, health, expiry."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from gpubot.db import alerts as alert_repo
from gpubot.db import bookings as repo
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.ports import GpuReading
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.booking import BookingAsk, book, release
from gpubot.scheduling.lifecycle.expiry import expire_due, warn_expiring
from gpubot.scheduling.lifecycle.health import check_health
from gpubot.scheduling.lifecycle.idle import check_idle, idle_pass, keep, snooze

from tests.engine_kit import deliver, make_engine, running_booking, simulated_policy

LIFE = {"idle": {"for": "10m", "grace": "30m"}, "health": {"telemetry_stale_after": "5m"}}


@pytest.fixture
def engine(database_url, clock):
    policy = simulated_policy(**LIFE)
    return make_engine(database_url, policy, clock)


def _report(engine, booking: Booking, util: float, temp: float = 60.0) -> None:
    readings = [GpuReading(i, util, temp) for i in range(booking.count)]
    with engine.db.session() as session:
        telemetry_repo.add_samples(booking.id, readings, engine.now(), session=session)


def _minutes(engine, clock, booking, minutes: int, util: float, temp: float = 60.0, check=check_idle) -> None:
    for _ in range(minutes):
        clock.advance(minutes=1)
        _report(engine, booking, util, temp)
        check(engine)
        deliver(engine)


def _load(engine, booking_id: int) -> Booking:
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session)


def _idle_dms(engine) -> list[str]:
    return [text for _user, text in engine.notifier.dms if "has been idle" in text]


def test_idle_reminder_once_then_keep_prevents_release(engine, clock):
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 9, util=3)
    assert _idle_dms(engine) == []
    _minutes(engine, clock, booking, 3, util=3)
    assert len(_idle_dms(engine)) == 1, "one reminder per idle stretch, not one per tick"
    assert engine.notifier.dm_actions[-1] == ["idle_keep", "idle_snooze", "booking_release"]
    keep(engine, _load(engine, booking.id))
    _minutes(engine, clock, booking, 45, util=3)
    assert _load(engine, booking.id).state == BookingState.ACTIVE
    assert len(_idle_dms(engine)) == 1


def _told(engine, words: str) -> list[str]:
    return [text for user, text in engine.notifier.dms if user == "UALICE" and words in text]


def test_keep_told_twice_for_one_idle_stretch_is_confirmed_once(engine, clock):
    """Two replicas (or a retried click) that both loaded the idle booking keep it: one confirmation."""
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 12, util=3)
    seen = _load(engine, booking.id)
    keep(engine, seen)
    keep(engine, seen)
    deliver(engine)
    keep(engine, _load(engine, booking.id))
    deliver(engine)
    assert _told(engine, "kept: no more idle reminders") == [f"#{booking.id} kept: no more idle reminders for this "
                                                             "idle stretch."]


def test_a_snooze_told_twice_is_confirmed_once_and_a_later_one_again(engine, clock):
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 12, util=3)
    seen = _load(engine, booking.id)
    until = snooze(engine, seen)
    clock.advance(seconds=5)
    assert snooze(engine, seen) == until, "a snooze still running stands"
    assert snooze(engine, _load(engine, booking.id)) == until
    deliver(engine)
    assert _told(engine, "idle checks snoozed") == [f"#{booking.id}: idle checks snoozed until {until:%H:%M} UTC."]
    clock.advance(hours=1, seconds=1)
    later = snooze(engine, _load(engine, booking.id))
    deliver(engine)
    assert later > until and len(_told(engine, "idle checks snoozed")) == 2


def test_idle_without_answer_is_released_after_grace(engine, clock):
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 11, util=2)
    assert len(_idle_dms(engine)) == 1
    _minutes(engine, clock, booking, 29, util=2)
    assert _load(engine, booking.id).state == BookingState.ACTIVE
    _minutes(engine, clock, booking, 2, util=2)
    released = _load(engine, booking.id)
    assert released.state == BookingState.RELEASED
    assert any("was released because its GPUs were idle" in text for _u, text in engine.notifier.dms)


def test_activity_ends_the_idle_stretch(engine, clock):
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 11, util=2)
    _minutes(engine, clock, booking, 5, util=90)
    _minutes(engine, clock, booking, 40, util=90)
    assert _load(engine, booking.id).state == BookingState.ACTIVE
    assert len(_idle_dms(engine)) == 1


def test_remind_mode_reminds_again_instead_of_releasing(database_url, clock):
    engine = make_engine(database_url, simulated_policy(idle={"for": "10m", "grace": "30m", "action": "remind"}),
                         clock)
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 75, util=1)
    assert _load(engine, booking.id).state == BookingState.ACTIVE
    assert len(_idle_dms(engine)) == 3  # at 10 min, then after each 30 min grace


def test_stale_telemetry_is_reported_once_and_never_reclaimed(engine, clock):
    booking = running_booking(engine)
    _report(engine, booking, util=0)
    for _ in range(60):
        clock.advance(minutes=1)
        check_idle(engine)
        deliver(engine)
    assert _load(engine, booking.id).state == BookingState.ACTIVE
    stale = [text for _u, text in engine.notifier.dms if "no GPU telemetry" in text]
    assert len(stale) == 1


def test_overheat_pages_once_and_resolves(engine, clock):
    booking = running_booking(engine)
    _minutes(engine, clock, booking, 5, util=90, temp=91, check=check_health)
    triggers = [a for a in engine.notifier.alerts if a[0] == "overheat" and not a[3]]
    assert len(triggers) == 2  # one per hot GPU, not one per reading
    assert {a[1] for a in triggers} == {f"gpubot:overheat:{booking.id}:0", f"gpubot:overheat:{booking.id}:1"}
    told = [(user, text) for user, text in engine.notifier.dms if "On-call has been paged" in text]
    assert [user for user, _text in told] == ["UALICE", "UALICE"]
    assert f"{booking.label} GPU 0 is at 91 °C (limit" in told[0][1] and "util 90 %" in told[0][1]
    assert all("owner UALICE" in a[2] and "<@" not in a[2] for a in triggers), "PagerDuty reads no Slack syntax"
    _minutes(engine, clock, booking, 20, util=90, temp=84, check=check_health)
    assert not [a for a in engine.notifier.alerts if a[3]], "84 °C is under the limit, not under the hysteresis"
    _minutes(engine, clock, booking, 1, util=90, temp=70, check=check_health)
    assert not [a for a in engine.notifier.alerts if a[3]], "cool for less than resolve_for"
    _minutes(engine, clock, booking, 2, util=90, temp=70, check=check_health)
    resolves = [a for a in engine.notifier.alerts if a[0] == "overheat" and a[3]]
    assert len(resolves) == 2
    with engine.db.session() as session:
        rows = alert_repo.alerts_between(clock() - timedelta(hours=1), clock(), session=session)
    assert [row.state for row in rows] == ["resolved", "resolved"]
    _minutes(engine, clock, booking, 2, util=90, temp=95, check=check_health)
    assert len([a for a in engine.notifier.alerts if not a[3]]) == 4, "a new overheat after resolve pages again"
    assert sum("On-call has been paged" in text for _u, text in engine.notifier.dms) == 4, "and tells the owner again"


def test_past_the_hourly_cap_a_crossing_is_folded_into_the_alert_and_pages_nobody(engine, clock):
    booking = running_booking(engine, gpus=8)
    _minutes(engine, clock, booking, 3, util=90, temp=95, check=check_health)
    triggers = [a for a in engine.notifier.alerts if a[0] == "overheat" and not a[3]]
    assert len(triggers) == engine.policy.health.max_pages_per_hour == 4  # GPUs 0-3 page; 4-7 are folded
    with engine.db.session() as session:
        rows = alert_repo.alerts_between(clock() - timedelta(hours=1), clock(), session=session)
    assert len(rows) == 4 and sum(row.folded for row in rows) == 4
    assert sorted(entry["gpu"] for row in rows for entry in json.loads(row.details or "[]")) == [4, 5, 6, 7]
    _minutes(engine, clock, booking, 5, util=90, temp=95, check=check_health)
    with engine.db.session() as session:
        rows = alert_repo.alerts_between(clock() - timedelta(hours=1), clock(), session=session)
    assert sum(row.folded for row in rows) == 4, "a crossing still going on is folded once"
    assert len([a for a in engine.notifier.alerts if not a[3]]) == 4
    deliver(engine)  # each fold updates its alert's messages (one per reader), never posts or pages again
    folded = {row.dedup_key: row.folded for row in rows if row.folded}
    readers = len({engine.policy.team.alerts_channel, *engine.policy.team.oncall} - {""})
    assert len(engine.notifier.alert_updates) == sum(folded.values()) * readers
    assert {(key, count) for key, count, _text in engine.notifier.alert_updates} == {
        (key, n) for key, count in folded.items() for n in range(1, count + 1)}


def test_an_overheat_alert_slack_missed_reaches_on_call_later_once_with_its_replace_button(engine, clock):
    booking = running_booking(engine, gpus=1)
    deliver(engine)
    engine.notifier.dms.clear()
    engine.notifier.dm_actions.clear()
    engine.notifier.slack_down = True
    _minutes(engine, clock, booking, 2, util=90, temp=92, check=check_health)
    assert engine.notifier.alerts == [] and engine.notifier.dms == []
    engine.notifier.slack_down = False
    clock.advance(seconds=5)
    deliver(engine)
    clock.advance(minutes=5)
    deliver(engine)
    sent = [(a[1], buttons) for a, buttons in zip(engine.notifier.alerts, engine.notifier.alert_actions, strict=True)]
    assert sent == [(f"gpubot:overheat:{booking.id}:0", ["booking_replace"])]
    assert [(user, buttons) for (user, _text), buttons in zip(engine.notifier.dms, engine.notifier.dm_actions,
                                                               strict=True)] == [("UALICE", ["booking_replace"])]


def test_expiry_warnings_are_sent_once_each_then_release_at_the_end(engine, clock):
    booking = running_booking(engine, hours=1)
    for _ in range(61):
        clock.advance(minutes=1)
        warn_expiring(engine)
        expire_due(engine)
        deliver(engine)
    warnings = [text for _u, text in engine.notifier.dms if "ends in" in text]
    assert [w.split(" ends in ")[1].split(" ")[0] for w in warnings] == ["30m", "15m", "5m"]
    assert ["booking_extend", "booking_release"] in engine.notifier.dm_actions
    final = _load(engine, booking.id)
    assert final.state == BookingState.RELEASED
    assert engine.providers["a"].list_owned() == []
    assert any(f"{final.label} released (its time was up)" in text for _u, text in engine.notifier.dms)


def test_a_30_minute_booking_gets_no_reminder_at_ready_only_those_inside_it(engine, clock):
    """The 30 min offset is as long as the booking: it would say "ends in 29m58s" the moment it is ready."""
    booking = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=1, duration=timedelta(minutes=30)))
    acquire(engine, booking.booking.id)
    clock.advance(seconds=2)
    warn_expiring(engine)
    deliver(engine)
    assert [text for _u, text in engine.notifier.dms if "ends in" in text] == []
    for _ in range(30):
        clock.advance(minutes=1)
        warn_expiring(engine)
        expire_due(engine)
        deliver(engine)
    warnings = [text for _u, text in engine.notifier.dms if "ends in" in text]
    assert [w.split(" ends in ")[1].split(" ")[0] for w in warnings] == ["14m58s", "4m58s"]


def test_a_release_by_an_admin_names_them_to_the_owner(engine):
    by_owner, by_admin = running_booking(engine), running_booking(engine)
    release(engine, by_owner.id, "UALICE")
    release(engine, by_admin.id, "UADMIN")
    deliver(engine)
    said = [text for user, text in engine.notifier.dms if user == "UALICE" and " released (" in text]
    assert [text.split(" after ")[0] for text in said] == [
        f"{by_owner.label} released (released by its owner)", f"{by_admin.label} released (released by <@UADMIN>)"]


def test_the_booking_an_idle_check_hands_back_is_the_one_it_wrote(engine, clock):
    """`idle_pass(…).left` (the replay reads no booking back) gives each booking as the ledger then holds it:
    reminded, cleared by activity, reminded again, released after the grace."""
    booking = running_booking(engine)
    fields = ("state", "idle_since", "idle_reminded_at", "idle_rule", "idle_kept_since", "released_at")
    seen = []

    def check(engine) -> None:
        left = idle_pass(engine, only=[booking.id]).left
        if booking.id in left:
            stored = _load(engine, booking.id)
            assert [getattr(left[booking.id], f) for f in fields] == [getattr(stored, f) for f in fields]
            seen.append((left[booking.id].state, left[booking.id].idle_reminded_at is not None))

    for util, minutes in ((2, 11), (90, 3), (2, 42)):
        _minutes(engine, clock, booking, minutes, util=util, check=check)
    assert (BookingState.ACTIVE, True) in seen and (BookingState.ACTIVE, False) in seen
    assert seen[-1][0] == BookingState.RELEASED
