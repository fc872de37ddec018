"""Block Kit builders: a long reply is split over sections at line ends, never clipped mid-list; a booking's
message shows its state (booting: where, no Connect line yet, Release) and its buttons."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.bot.views import MAX_BLOCKS, MAX_TEXT, booking_message, section_message, status_lines
from gpubot.domain.model import Booking, BookingState


def _texts(message) -> list[str]:
    return [block["text"]["text"] for block in message["blocks"]]


def test_a_short_reply_is_one_section():
    assert _texts(section_message("*Queue*\n1. #4 …")) == ["*Queue*\n1. #4 …"]


def test_a_long_list_is_split_at_line_ends_and_shown_whole():
    lines = ["*Budgets for November 2026*", *(f"user:U{i:04d}: $12.00 spent of $40.00 (30 %)" for i in range(200))]
    sections = _texts(section_message("\n".join(lines)))
    assert len(sections) > 1 and all(len(s) <= MAX_TEXT for s in sections)
    assert "\n".join(sections).split("\n") == lines


def test_past_slacks_block_limit_the_rest_is_counted_not_dropped_silently():
    lines = [f"{i:04d} " + "x" * (MAX_TEXT - 5) for i in range(MAX_BLOCKS + 10)]
    sections = _texts(section_message("\n".join(lines)))
    assert len(sections) == MAX_BLOCKS
    assert sections[:-1] == lines[:MAX_BLOCKS - 1] and sections[-1] == "… and 11 more lines."


def _booking(state: BookingState, **changes) -> Booking:
    start = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    return Booking(id=12, owner="UALICE", gpu="a100", count=4, duration=timedelta(hours=6), state=state,
                   requested_at=start, provider="lambda", region="us-east-1", started_at=start,
                   ends_at=start + timedelta(hours=6), **changes)


def test_a_booting_booking_says_where_it_boots_offers_release_and_no_connect_line_yet():
    message = booking_message(_booking(BookingState.BOOTING), ["booting on lambda us-east-1 · 2m10s"], "USD")
    assert "🟡 *#12* 4× A100 40GB for 6h — booting on lambda us-east-1" in message["text"]
    assert "booting on lambda us-east-1 · 2m10s" in message["text"]
    assert "Connect" not in str(message["blocks"])
    buttons = [e["action_id"] for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert buttons == ["booking_release"]
    assert "until 2026-12-01 16:00 UTC" in status_lines([_booking(BookingState.BOOTING)], everyone=False)


def test_once_active_the_connect_line_appears():
    message = booking_message(_booking(BookingState.ACTIVE, connect="ssh ubuntu@198.51.100.2"), [], "USD")
    assert "Connect: `ssh ubuntu@198.51.100.2`" in str(message["blocks"])


def test_status_says_which_booking_replaces_a_hot_one_and_until_when():
    hot = _booking(BookingState.ACTIVE)
    new = _booking(BookingState.ACTIVE, replaces=12).with_(id=13, ready_at=datetime(2026, 12, 1, 11, 0, tzinfo=UTC))
    shown = status_lines([new, hot], everyone=False, replace_grace=timedelta(minutes=30)).split("\n")
    assert shown[1].endswith(", being replaced by #13 (released by 2026-12-01 11:30 UTC at the latest)")
    assert "replaced" not in shown[0]
    waiting = new.with_(state=BookingState.ACQUIRING, ready_at=None, started_at=None)
    assert status_lines([waiting, hot], everyone=False, replace_grace=timedelta(minutes=30)).endswith(
        ", being replaced by #13 (released 30m after it is ready)")
