"""Which expiry reminder is due: only offsets shorter than the booking's usable time, the tightest of those due."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.domain.expiry import due_reminder
from hypothesis import given
from hypothesis import strategies as st

READY = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
OFFSETS = [30 * MIN, 15 * MIN, 5 * MIN]


def test_a_30_minute_booking_gets_no_warning_at_ready_only_the_shorter_ones():
    ends = READY + 30 * MIN
    assert due_reminder(READY, ends, READY + timedelta(seconds=2), OFFSETS) is None
    assert due_reminder(READY, ends, READY + 14 * MIN, OFFSETS) is None
    assert due_reminder(READY, ends, READY + 15 * MIN, OFFSETS) == 15 * MIN
    assert due_reminder(READY, ends, READY + 26 * MIN, OFFSETS) == 5 * MIN


def test_a_long_booking_gets_every_offset_and_nothing_after_its_end():
    ends = READY + timedelta(hours=6)
    assert due_reminder(READY, ends, ends - 30 * MIN, OFFSETS) == 30 * MIN
    assert due_reminder(READY, ends, ends - 31 * MIN, OFFSETS) is None
    assert due_reminder(READY, ends, ends, OFFSETS) is None
    assert due_reminder(None, ends, ends - MIN, OFFSETS) is None


def test_after_downtime_only_the_tightest_is_owed():
    ends = READY + timedelta(hours=2)
    assert due_reminder(READY, ends, ends - 2 * MIN, OFFSETS) == 5 * MIN


@given(st.integers(1, 24 * 60), st.integers(0, 24 * 60 * 60))
def test_no_reminder_is_ever_due_at_ready_or_longer_than_the_booking(minutes: int, seconds_in: int) -> None:
    ends = READY + minutes * MIN
    assert due_reminder(READY, ends, READY, OFFSETS) is None
    due = due_reminder(READY, ends, READY + timedelta(seconds=seconds_in), OFFSETS)
    assert due is None or due < minutes * MIN
