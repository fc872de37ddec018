"""The bounds of a booking's next billed stretch, read under its lock (domain.bill_bounds)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from gpubot.domain.bill_bounds import BillingMark, release_end, still_billed
from gpubot.domain.model import BookingState

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(("state", "billed_by_a_pass", "billed_by_the_release"), [
    (BookingState.BOOTING, True, False),
    (BookingState.ACTIVE, True, False),
    (BookingState.RELEASING, False, True),
    (BookingState.RELEASED, False, False),
    (BookingState.ACQUIRING, False, False),
])
def test_a_pass_bills_a_running_machine_and_the_release_bills_the_rest(state, billed_by_a_pass,
                                                                      billed_by_the_release) -> None:
    mark = BillingMark(state, "gpubot-1-abc", T0)
    assert still_billed(mark, "gpubot-1-abc") is billed_by_a_pass
    assert still_billed(mark, "gpubot-1-abc", releasing=True) is billed_by_the_release


def test_a_machine_the_booking_no_longer_holds_is_not_billed() -> None:
    assert not still_billed(BillingMark(BookingState.ACTIVE, "gpubot-1-new", T0), "gpubot-1-old")
    assert not still_billed(None, "gpubot-1-old")


def test_a_release_ends_at_the_stop_or_now_and_never_before_what_is_billed() -> None:
    mark = BillingMark(BookingState.RELEASING, "m", T0 + timedelta(minutes=5))
    now = T0 + timedelta(minutes=30)
    assert release_end(mark, None, now) == now
    assert release_end(mark, T0 + timedelta(minutes=10), now) == T0 + timedelta(minutes=10)
    assert release_end(mark, T0 + timedelta(minutes=1), now) == T0 + timedelta(minutes=5)
    assert release_end(mark, T0 + timedelta(hours=1), now) == now
    assert release_end(BillingMark(BookingState.RELEASING, "m", None), None, now) == now
