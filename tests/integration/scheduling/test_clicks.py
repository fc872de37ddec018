"""Who may act and exactly-once, decided by the engine once (scheduling.desk.clicks, scheduling.booking.admin):
a click acts once per rendered message, someone else's booking is refused and left as it was, a refused click
never swallows the admin's, and `/gpu admin …` use cases refuse a non-admin themselves."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from gpubot.db import bookings as repo
from gpubot.db import effects
from gpubot.domain.errors import Forbidden, NotYours
from gpubot.domain.model import BookingState
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.admin import admin_release, set_budget, set_provider_paused
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.desk.clicks import Act, act

from tests.engine_kit import make_engine, simulated_policy


def _state(engine, booking_id: int) -> BookingState:
    with engine.db.session() as session:
        return repo.get_booking(booking_id, session=session).state


def _running(engine) -> int:
    booked = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=1, duration=timedelta(hours=2)))
    return acquire(engine, booked.booking.id).id


def test_someone_elses_booking_is_refused_and_left_as_it_was(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    booking_id = _running(engine)
    with pytest.raises(NotYours):
        act(engine, Act.RELEASE, booking_id, "UEVE", "111.1")
    assert _state(engine, booking_id) == BookingState.ACTIVE


def test_the_same_extend_click_on_one_message_extends_once_and_a_new_rendering_again(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    booking_id = _running(engine)
    first = act(engine, Act.EXTEND, booking_id, "UALICE", "111.1", "v1")
    again = act(engine, Act.EXTEND, booking_id, "UALICE", "111.1", "v1")
    assert first.done and not again.done and again.extended.repeat
    assert again.extended.booking.duration == timedelta(hours=3)
    later = act(engine, Act.EXTEND, booking_id, "UALICE", "111.1", "v2")  # the message drawn anew, clicked again
    assert later.done and later.extended.booking.duration == timedelta(hours=4)


def test_a_non_admins_approve_does_not_swallow_the_admins(database_url, clock):
    engine = make_engine(database_url, simulated_policy(budget={"monthly": 1, "over_budget": "approve"}), clock)
    booked = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=1, duration=timedelta(hours=2)))
    assert booked.booking.state == BookingState.AWAITING_APPROVAL
    with pytest.raises(Forbidden):
        act(engine, Act.APPROVE, booked.booking.id, "UEVE", "222.2")
    assert act(engine, Act.APPROVE, booked.booking.id, "UADMIN", "222.2").done
    assert not act(engine, Act.APPROVE, booked.booking.id, "UADMIN", "222.2").done  # the same click: once
    assert _state(engine, booked.booking.id) != BookingState.AWAITING_APPROVAL


def test_admin_use_cases_refuse_a_non_admin_and_change_nothing(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    booking_id = _running(engine)
    with pytest.raises(Forbidden):
        admin_release(engine, booking_id, "UALICE")  # even the owner: this is the admin's command
    with pytest.raises(Forbidden):
        set_budget(engine, "team", Decimal(1), "UALICE")
    with pytest.raises(Forbidden):
        set_provider_paused(engine, "a", True, "UALICE")
    assert _state(engine, booking_id) == BookingState.ACTIVE
    with engine.db.session() as session:
        assert effects.paused_providers(session=session) == set()
        assert "team" not in effects.budget_overrides(session=session)
    assert admin_release(engine, booking_id, "UADMIN").state in (BookingState.RELEASED, BookingState.RELEASING)
