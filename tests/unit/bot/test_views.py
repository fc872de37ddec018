"""Block Kit builders: a long reply is split over sections at line ends, never clipped mid-list."""

from __future__ import annotations

from bot.views import MAX_BLOCKS, MAX_TEXT, section_message


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
