"""The booking message as a pure rendering of the booking now (bot.booking_quote): the price it is billed at after a
fallback (and that it differs from the first quote), the length and cost after an extension, the whole message in
the reader's language, no start time once it is not scheduled, and user text made inert."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.bot.booking_quote import booking_lines, message_of
from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.notices import render
from gpubot.domain.booking_view import BookingView
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import (
    BookingProgress,
    BookingRequested,
    CudaExclusion,
    ProgressStep,
    QuoteBudgetRow,
    ShapeChoice,
    StepKind,
)
from gpubot.domain.replacing import replacements

from tests.unit.bot.test_zh_no_english import english_words

HOSTILE = "x```<!channel>```&<@UEVE>"
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
QUOTED = BookingRequested(to="UALICE", booking_id=2, gpu="a100", count=4, duration=timedelta(hours=6),
                          hourly=Decimal("1.99"), total=Decimal("47.76"), currency="USD", provider="sim",
                          region="sim-east", estimate=Decimal("47.76"),
                          budget=(QuoteBudgetRow("team", Decimal(1000), Decimal(100)),))


def _booking(state: BookingState = BookingState.ACTIVE, **changes) -> Booking:
    values = {"id": 2, "owner": "UALICE", "gpu": "a100", "count": 4, "duration": timedelta(hours=6),
              "state": state, "requested_at": NOW} | changes
    return Booking(**values)


def _placed(region: str, price: str, total: str, hours: int = 6, **changes) -> BookingView:
    booking = _booking(provider="sim", region=region, price_per_gpu_hour=Decimal(price), currency="USD",
                       started_at=NOW, ends_at=NOW + timedelta(hours=hours), duration=timedelta(hours=hours),
                       **changes)
    return BookingView(booking, QUOTED, Decimal(price), Decimal(total), "USD")


def _text(view: BookingView, line: str | None = None, tr=ENGLISH) -> str:
    return message_of(view, line, tr)["text"]


def test_after_a_fallback_the_message_shows_the_billed_price_and_place_and_the_first_quote_apart():
    text = _text(_placed("sim-west", "2.19", "52.56"))
    assert "≈ $52.56 for 6h at $2.19/GPU-h on sim sim-west" in text
    assert "quoted $1.99/GPU-h on sim sim-east" in text
    assert "$47.76" not in text and "at $1.99/GPU-h on sim sim-east" not in text


def test_billed_as_quoted_the_message_says_no_more_than_the_price():
    text = _text(_placed("sim-east", "1.99", "47.76"))
    assert "≈ $47.76 for 6h at $1.99/GPU-h on sim sim-east" in text and "quoted" not in text


def test_after_an_extension_headline_and_price_line_show_the_new_length_and_its_cost():
    text = _text(_placed("sim-east", "1.99", "63.68", hours=8), "Extended by 2h")
    assert "for 8h — active" in text and "≈ $63.68 for 8h at $1.99/GPU-h" in text and "for 6h" not in text


def test_before_it_is_placed_the_quote_is_shown_for_the_length_it_has_now():
    text = _text(BookingView(_booking(BookingState.QUEUED, duration=timedelta(hours=3)), QUOTED))
    assert "≈ $23.88 for 3h at $1.99/GPU-h on sim sim-east" in text


def test_the_budget_effect_is_that_of_the_billed_total():
    text = _text(_placed("sim-west", "2.19", "52.56"))
    assert "team at 15 % of $1,000.00 after this (was 10 %)" in text


def test_a_chinese_reader_gets_the_whole_message_in_chinese():
    view = _placed("sim-west", "2.19", "52.56", project="vision", note="run")
    text = _text(view, None, translator_for("zh"))
    names = ("sim-west", "sim-east", "sim", "A100", "40GB", "GPU", "team", "vision", "run", "UTC", "US$")
    left = re.sub("|".join(sorted(map(re.escape, names), key=len, reverse=True)), "", text)
    assert not re.search(r"[A-Za-z]{2,}", left), text


def test_a_scheduled_booking_says_when_it_starts_and_once_cancelled_it_no_longer_does():
    start = NOW + timedelta(days=1)
    scheduled = BookingView(_booking(BookingState.SCHEDULED, start_at=start), QUOTED)
    cancelled = BookingView(_booking(BookingState.CANCELLED, start_at=start), QUOTED)
    assert any("Starts 2026-12-02 10:00 UTC." in line for line in booking_lines(scheduled, ENGLISH))
    assert not any("Starts" in line for line in booking_lines(cancelled, ENGLISH))


def test_a_booking_without_a_kept_quote_shows_its_headline_and_line():
    text = _text(BookingView(_booking(BookingState.QUEUED)), "Queued")
    assert text.splitlines()[1:] == ["Queued"]


def test_user_text_and_quote_rows_are_inert():
    quoted = BookingRequested(to="U1", booking_id=4, gpu="a100", count=4, provider=HOSTILE, region=HOSTILE,
                              hourly=Decimal(1), total=Decimal(6), duration=timedelta(hours=6), decision="warn",
                              estimate=Decimal(60), budget=(QuoteBudgetRow(HOSTILE, Decimal(50), Decimal(10)),),
                              choices=(ShapeChoice("a100", 4, Decimal(60), HOSTILE, HOSTILE, True),
                                       ShapeChoice(HOSTILE, 2)),
                              left_out=(CudaExclusion(HOSTILE, HOSTILE, HOSTILE, HOSTILE),))
    text = _text(BookingView(_booking(BookingState.QUEUED, project=HOSTILE, note=HOSTILE), quoted))
    assert "would reach" in text and "Alternatives" in text and "Left out for CUDA" in text
    assert "Project: xˋˋˋ&lt;!channel&gt;ˋˋˋ" in text
    assert "<!channel>" not in text and "<@UEVE>" not in text and "```<" not in text


def test_a_booking_cancelled_before_it_was_placed_shows_no_price():
    assert not any("≈" in line for line in booking_lines(BookingView(_booking(BookingState.CANCELLED), QUOTED),
                                                          ENGLISH))


def _replacing(replacement: Booking | None, hot_state: BookingState = BookingState.ACTIVE) -> BookingView:
    hot = _placed("sim-east", "1.99", "47.76", state=hot_state)
    return replace(hot, replacement=replacement, replace_grace=timedelta(minutes=30))


def test_a_booking_being_replaced_says_by_which_and_by_when_it_is_released_as_status_does():
    waiting = _booking(BookingState.QUEUED, id=3, replaces=2)
    ready = _booking(id=3, replaces=2, started_at=NOW, ready_at=NOW + timedelta(minutes=2))
    assert "🔁 Being replaced by #3 (released 30m after it is ready)." in _text(_replacing(waiting))
    assert "🔁 Being replaced by #3 (released by 2026-12-01 10:32 UTC at the latest)." in _text(_replacing(ready))
    assert "正由 #3 迁移替代（最迟于 2026-12-01 10:32 UTC 释放）。" in _text(_replacing(ready), tr=translator_for("zh"))


def test_a_booking_not_or_no_longer_being_replaced_says_nothing_of_it():
    ready = _booking(id=3, replaces=2, started_at=NOW)
    assert "replaced" not in _text(_replacing(None))
    assert "replaced" not in _text(_replacing(ready, BookingState.RELEASED))


@pytest.mark.parametrize(("state", "english"), [
    (BookingState.FAILED, "Its replacement #3 was given up; this booking runs on."),
    (BookingState.CANCELLED, "Its replacement #3 was cancelled; this booking runs on."),
    (BookingState.RELEASED, "Its replacement #3 has ended; this booking runs on.")])
def test_a_booking_whose_replacement_ended_first_is_no_longer_being_replaced(state, english):
    hot = _replacing(None)
    ended = _booking(state, id=3, replaces=2, started_at=NOW if state is BookingState.RELEASED else None)
    live = _booking(BookingState.QUEUED, id=3, replaces=2)
    assert "Being replaced by #3" in _text(replace(hot, replacement=replacements([hot.booking, live]).get(2)))
    view = replace(hot, replacement=replacements([hot.booking, ended]).get(2))  # as the ledger holds it now
    redraw = BookingProgress(to="UALICE", booking_id=2, gpu="a100", count=4, state="active", trail=(
        ProgressStep(StepKind.REPLACING, other=3, then=state.value),))
    text = _text(view, render(redraw, ENGLISH).booking_line)
    assert "being replaced" not in text.lower() and "looking for capacity" not in text
    assert text.split("\n")[-1] == english
    zh = translator_for("zh")
    chinese = _text(view, render(redraw, zh).booking_line, tr=zh)
    assert "迁移替代" not in chinese and not english_words(chinese), chinese
