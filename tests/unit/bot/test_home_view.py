"""App Home as a pure builder: live and waiting bookings carry the message buttons' action ids and values, a Book
button opens the modal, the queue has positions, each budget has a bar of spend and commitment, and only bookings
that ended in the last day are listed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.bot.home_view import BOOK_ACTION, HomeData, budget_bar, home_view
from gpubot.bot.i18n import translator_for
from gpubot.bot.views import status_lines
from gpubot.domain.budget import BudgetLine
from gpubot.domain.model import Booking, BookingState, button_value

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def _booking(booking_id: int, state: BookingState, owner: str = "UALICE", **changes) -> Booking:
    return Booking(id=booking_id, owner=owner, gpu="a100", count=2, duration=timedelta(hours=2), state=state,
                   requested_at=NOW - timedelta(hours=1), **changes)


def _blocks(data: HomeData, language: str = "en") -> list[dict]:
    return home_view(data, translator_for(language)).to_dict()["blocks"]


def _buttons(blocks: list[dict]) -> list[tuple[str, str, str]]:
    return [(e["action_id"], e["value"], e["text"]["text"]) for b in blocks if b["type"] == "actions"
            for e in b["elements"]]


def _text(blocks: list[dict]) -> str:
    parts = []
    for block in blocks:
        parts += [block.get("text", {}).get("text", "")] + [e.get("text", "") for e in block.get("elements", [])
                                                            if isinstance(e.get("text"), str)]
    return "\n".join(parts)


def test_each_live_or_waiting_booking_has_the_buttons_of_its_message_and_there_is_a_book_button():
    active = _booking(7, BookingState.ACTIVE, ends_at=NOW + timedelta(hours=1), started_at=NOW, provider="sim")
    booting = _booking(8, BookingState.BOOTING, started_at=NOW, provider="sim")
    queued = _booking(9, BookingState.QUEUED)
    waiting = _booking(10, BookingState.AWAITING_APPROVAL)
    blocks = _blocks(HomeData("UALICE", NOW, "USD", bookings=[waiting, queued, booting, active]))
    assert _buttons(blocks) == [
        (BOOK_ACTION, "book", "Book GPUs"),
        ("booking_cancel", button_value(waiting), "Cancel"), ("booking_cancel", button_value(queued), "Cancel"),
        ("booking_release", button_value(booting), "Release"),
        ("booking_extend", button_value(active), "Extend 1h"), ("booking_release", button_value(active), "Release")]
    assert button_value(active) == f"7@active.{int((NOW + timedelta(hours=1)).timestamp())}"


def test_ended_bookings_only_from_the_last_day_with_the_way_to_older_ones():
    recent = _booking(3, BookingState.RELEASED, released_at=NOW - timedelta(hours=23))
    old = _booking(2, BookingState.CANCELLED, released_at=NOW - timedelta(days=2))
    blocks = _blocks(HomeData("UALICE", NOW, "USD", bookings=[recent, old]))
    text = _text(blocks)
    assert "*#3*" in text and "*#2*" not in text
    assert "You have no bookings." in text and "`/gpu status all`" in text
    assert [a for a, _v, _t in _buttons(blocks)] == [BOOK_ACTION]  # an ended booking has nothing to click


def test_a_booking_being_replaced_says_by_which_and_until_when_as_status_does():
    hot = _booking(7, BookingState.ACTIVE, ends_at=NOW + timedelta(hours=3), started_at=NOW, provider="sim")
    new = _booking(9, BookingState.ACTIVE, ends_at=NOW + timedelta(hours=3), started_at=NOW, provider="sim",
                   replaces=7, ready_at=NOW)
    grace = timedelta(minutes=30)
    data = HomeData("UALICE", NOW, "USD", bookings=[new, hot], replace_grace=grace)
    english = _text(_blocks(data))
    assert ", being replaced by #9 (released by 2026-12-01 10:30 UTC at the latest)" in english
    assert english.count("being replaced") == 1  # the replacement itself is not being replaced
    assert status_lines([new, hot], everyone=False, replace_grace=grace).split("\n")[1] in english
    assert "，正由 #9 迁移替代（最迟于 2026-12-01 10:30 UTC 释放）" in _text(_blocks(data, "zh"))
    acquiring = new.with_(state=BookingState.ACQUIRING, started_at=None, ready_at=None)
    assert ", being replaced by #9 (released 30m after it is ready)" in _text(_blocks(
        HomeData("UALICE", NOW, "USD", bookings=[acquiring, hot], replace_grace=grace)))


def test_the_queue_shows_positions_and_marks_the_readers_own():
    queue = [(1, _booking(4, BookingState.QUEUED, owner="UBOB")), (2, _booking(5, BookingState.QUEUED))]
    text = _text(_blocks(HomeData("UALICE", NOW, "USD", queue=queue)))
    assert "1. #4 2× A100 40GB (<@UBOB>)\n*2. #5 2× A100 40GB (<@UALICE>)*" in text
    assert "Nobody is waiting." in _text(_blocks(HomeData("UALICE", NOW, "USD")))


@pytest.mark.parametrize(("spent", "committed", "bar"), [
    ("0", "0", "░" * 20), ("250", "250", "█████" + "▒" * 5 + "░" * 10), ("1000", "0", "█" * 20),
    ("800", "900", "█" * 16 + "▒" * 4), ("1", "4", "█▒" + "░" * 18),
    ("0.004", "0.01", "▒" + "░" * 19)])
def test_the_budget_bar_shows_spend_then_commitment_in_twenty_cells_and_hides_no_cent(spent, committed, bar):
    assert budget_bar(BudgetLine("team", Decimal(1000), Decimal(spent), Decimal(committed))) == bar


def test_each_budget_line_is_a_bar_with_its_figures_and_an_overrun_is_flagged():
    lines = [BudgetLine("team", Decimal(5000), Decimal(1000), Decimal(500)),
             BudgetLine("user:UALICE", Decimal(100), Decimal(90), Decimal(30))]
    text = _text(_blocks(HomeData("UALICE", NOW, "USD", budgets=lines)))
    assert "*team* `" + "████▒▒" + "░" * 14 + "`\n$1,000.00 spent + $500.00 committed of $5,000.00 (30 %)" in text
    assert "*user:UALICE* `" + "█" * 18 + "▒▒` ⚠️\n$90.00 spent + $30.00 committed of $100.00 (120 %)" in text


def test_a_crowded_home_stays_within_slacks_limits():
    many = [_booking(i, BookingState.QUEUED) for i in range(1, 60)]
    view = home_view(HomeData("UALICE", NOW, "USD", bookings=many, queue=list(enumerate(many, 1)),
                              budgets=[BudgetLine("team", Decimal(1), Decimal(0))]))
    blocks = view.to_dict()["blocks"]  # to_dict validates Slack's limits on every block
    assert len(blocks) <= 100
    assert "… and 39 more: `/gpu status`" in _text(blocks) and "… and 39 more: `/gpu queue`" in _text(blocks)
