"""Extending a booking: `booking.max_duration` bounds the whole booking; admins may pass it, and it says so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from gpubot.domain.errors import ParseError, Refused
from gpubot.domain.extension import plan_extension
from gpubot.domain.model import Booking, BookingState, button_value, parse_button_value

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
MAX = timedelta(days=3)


def test_two_extensions_cannot_add_up_past_the_limit():
    first = plan_extension("#6", T0, T0 + timedelta(hours=6), timedelta(hours=60), MAX, may_pass_limit=False)
    assert (first.length, first.past_limit) == (timedelta(hours=66), False)
    with pytest.raises(Refused) as refused:
        plan_extension("#6", T0, first.new_end, timedelta(days=3), MAX, may_pass_limit=False)
    text = str(refused.value)
    assert "#6 would run 5d18h in all, over the 3d limit per booking" in text
    assert "booking.max_duration" in text and "at most 6h more" in text


def test_one_extension_of_a_6h_booking_by_the_whole_limit_is_refused():
    with pytest.raises(Refused, match=r"3d6h in all, over the 3d limit.*at most 2d18h more"):
        plan_extension("#6", T0, T0 + timedelta(hours=6), timedelta(days=3), MAX, may_pass_limit=False)


def test_an_admin_passes_the_limit_and_the_plan_records_it():
    plan = plan_extension("#6", T0, T0 + timedelta(days=3), timedelta(days=3), MAX, may_pass_limit=True)
    assert (plan.new_end, plan.length, plan.limit, plan.past_limit) == (T0 + timedelta(days=6), timedelta(days=6),
                                                                        MAX, True)


def test_an_extension_up_to_the_limit_exactly_is_allowed_and_nothing_past_it():
    plan = plan_extension("#6", T0, T0 + timedelta(hours=70), timedelta(hours=2), MAX, may_pass_limit=False)
    assert plan.length == MAX and not plan.past_limit
    with pytest.raises(Refused, match="it is at the limit, so it cannot be extended"):
        plan_extension("#6", T0, plan.new_end, timedelta(minutes=30), MAX, may_pass_limit=False)


def test_an_empty_extension_is_refused():
    with pytest.raises(Refused, match="longer than zero"):
        plan_extension("#6", T0, T0 + timedelta(hours=1), timedelta(0), MAX, may_pass_limit=True)


def test_a_button_value_carries_the_version_its_message_showed():
    booking = Booking(id=12, owner="U", gpu="a100", count=1, duration=timedelta(hours=1), state=BookingState.ACTIVE,
                      requested_at=T0, ends_at=T0 + timedelta(hours=1))
    value = button_value(booking)
    assert parse_button_value(value) == (12, f"active.{int((T0 + timedelta(hours=1)).timestamp())}")
    assert parse_button_value(button_value(booking.with_(ends_at=T0 + timedelta(hours=2)))) != parse_button_value(value)
    assert parse_button_value("12") == (12, None)
    for forged in ("twelve@x", "9" * 30, "", "12@", "12@a b", None):
        with pytest.raises(ParseError):
            parse_button_value(forged)
