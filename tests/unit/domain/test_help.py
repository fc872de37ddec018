"""Unit tests of the `/gpu help` text."""

from __future__ import annotations

import pytest
from gpubot.domain.grammar import SUBCOMMANDS
from gpubot.domain.grammar_options import OPTION_EXAMPLES
from gpubot.domain.grammar_requests import BOOK_OPTIONS
from gpubot.domain.help import TOPICS, help_text


def test_general_help_shows_every_command_with_an_example() -> None:
    text = help_text()
    for command in SUBCOMMANDS:
        assert f"/gpu {command}" in text, command
    assert text == help_text(None) == help_text("")


def test_help_book_lists_every_option_with_an_example() -> None:
    text = help_text("book")
    for option in BOOK_OPTIONS:
        assert f"`--{option}" in text, option
        assert any(f"--{option}" in line and "/gpu book a100x4" in line for line in text.splitlines())
    for form in ("a100x4", "4xa100", "a100:4", "2h30m", "tomorrow 09:00", " or "):
        assert form in text, form
    assert OPTION_EXAMPLES["max-price"] in text


@pytest.mark.parametrize("topic", TOPICS)
def test_every_topic_has_its_own_text(topic: str) -> None:
    text = help_text(topic)
    assert text != help_text() and "/gpu" in text


def test_topics_are_case_and_dash_insensitive() -> None:
    assert help_text("BOOK") == help_text("--book") == help_text("book")
    assert help_text("ls") == help_text("status")


def test_unknown_topic_gives_general_help_and_says_so() -> None:
    text = help_text("frobnicate")
    assert text.startswith(help_text())
    assert "no help topic `frobnicate`" in text


def test_unknown_topic_is_shown_safely() -> None:
    text = help_text("`" + "x" * 500)
    assert "``" not in text.splitlines()[-1] and len(text.splitlines()[-1]) < 120
