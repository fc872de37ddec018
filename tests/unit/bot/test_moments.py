"""The bot's fuller reader of `--at` text (dateparser), checked for every form the docs claim it reads, its
tamed defaults (no clock, no time-less dates), and the forms it does not read (which the grammar reads itself)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from gpubot.bot.moments import read_moment
from gpubot.domain.errors import ParseError
from gpubot.domain.grammar import Book, parse
from gpubot.domain.grammar_moments import read_moment as grammar_reads

SHANGHAI = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 6, 3, 7, 20, tzinfo=UTC)  # Wednesday 15:20 in Shanghai


def local(moment: datetime | None) -> str | None:
    return moment.astimezone(SHANGHAI).strftime("%a %Y-%m-%d %H:%M") if moment else None


@pytest.mark.parametrize(("text", "expected"), [
    ("dec 1 9am", "Tue 2026-12-01 09:00"),
    ("1 december 09:00", "Tue 2026-12-01 09:00"),
    ("december 1st at 9:30am", "Tue 2026-12-01 09:30"),
    ("in 3 hours", "Wed 2026-06-03 18:20"),
    ("3小时后", "Wed 2026-06-03 18:20"),
    ("9 Dec 2026 10:00", "Wed 2026-12-09 10:00"),
    ("jan 5 9am", "Tue 2027-01-05 09:00"),  # a past month-day is next year's (PREFER_DATES_FROM = future)
    ("tomorrow morning", "Thu 2026-06-04 09:00"),
])
def test_what_dateparser_reads_in_the_readers_zone(text: str, expected: str) -> None:
    assert grammar_reads(text, NOW, SHANGHAI) is None  # the grammar's own forms do not cover it
    assert local(read_moment(text, NOW, SHANGHAI)) == expected


@pytest.mark.parametrize("text", ["dec 1", "12月1日 sometime", "next friday", "friday"])
def test_a_date_without_a_time_of_day_is_refused_not_read_at_midnight(text: str) -> None:
    try:
        moment = read_moment(text, NOW, SHANGHAI)
    except ParseError as refused:
        assert "needs a time of day" in str(refused)
    else:
        assert moment is None


@pytest.mark.parametrize("text", ["明天9点", "今晚8点", "下周一 09:00", "12月1日 9点", "9点半"])
def test_what_dateparser_does_not_read_is_why_the_grammar_reads_it(text: str) -> None:
    """Measured with dateparser 1.5: these come back None, so the grammar (domain.grammar_moments) reads them."""
    assert read_moment(text, NOW, SHANGHAI) is None
    assert grammar_reads(text, NOW, SHANGHAI) is not None


def test_now_comes_from_the_caller_never_the_clock() -> None:
    """RELATIVE_BASE is the grammar's now: the same text read at two nows gives two moments."""
    later = NOW.replace(year=2030)
    assert local(read_moment("in 3 hours", later, SHANGHAI)) == "Mon 2030-06-03 18:20"


def test_the_grammar_hands_only_unknown_text_with_words_to_the_reader() -> None:
    calls: list[str] = []

    def reader(text: str, now: datetime, zone: object) -> datetime | None:
        calls.append(text)
        return read_moment(text, now, zone)

    book = parse('book a100x4 2h --at "dec 1 9am"', now=NOW, user_tz=SHANGHAI, moments=reader)
    assert isinstance(book, Book) and local(book.start_at) == "Tue 2026-12-01 09:00"
    parse("book a100x4 2h --at 明天 9点", now=NOW, user_tz=SHANGHAI, moments=reader)
    with pytest.raises(ParseError, match="is not a start time"):
        parse("book a100x4 2h --at 9", now=NOW, user_tz=SHANGHAI, moments=reader)
    assert calls == ["dec 1 9am"]
