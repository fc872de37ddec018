"""Property tests of the `/gpu` grammar: it never crashes, and valid requests come back intact."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from gpubot.domain.catalog import GPUS
from gpubot.domain.errors import ParseError
from gpubot.domain.grammar import MAX_TEXT, Book, Command, Limits, Quote, Shape, parse
from hypothesis import given, settings
from hypothesis import strategies as st

ZONES = st.sampled_from([UTC, ZoneInfo("Europe/Berlin"), ZoneInfo("America/Los_Angeles"), ZoneInfo("Asia/Kolkata")])
NOWS = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))
LIMITS = st.builds(
    Limits,
    max_gpus=st.integers(1, 64),
    providers=st.sampled_from([(), ("lambda_cloud", "runpod", "aws")]),
    night_start=st.times(),
    night_end=st.times(),
    team_tz=ZONES,
)
ANY_CHAR = st.characters(codec=None, categories=None)  # every code point, surrogates and controls included
WORDS = st.sampled_from(
    ["book", "quote", "status", "ls", "all", "queue", "cancel", "release", "extend", "prices", "cost", "budget",
     "help", "admin", "provider", "pause", "budget", "set", "team", "watch", "watches", "unwatch", "or", "by", "x",
     "a100x4", "4xa100", "h100", "a100:4", "a10o", "a100x0", "6h", "0h", "-2h", "1.5h", "99999h", "#12", "12",
     "--spot", "--provider", "--region", "--max-price", "--project", "--at", "--night", "--note", "--for", "--by",
     "--at=tomorrow", "--note=\"", "\"", "“", "”", "—spot", "09:00", "9pm", "today", "tomorrow", "2026-12-01",
     "2026-12-01T09:00", "<@U123|bob>", "U123ABC", "user:", "project:llm", "$2.5", "abc", "NaN", "1e999",
     "\x00", "\u200b", "ａ１００", "9" * 400, "×"])
GRAMMARISH = st.lists(st.one_of(WORDS, st.text(ANY_CHAR, max_size=8)), max_size=14).map(" ".join)


def outcome(text: str, now: datetime, zone: object, limits: Limits) -> Command | ParseError:
    try:
        return parse(text, now=now, user_tz=zone, limits=limits)
    except ParseError as error:
        assert str(error).strip()
        return error


@settings(max_examples=400)
@given(st.text(ANY_CHAR, max_size=MAX_TEXT + 50), NOWS, ZONES, LIMITS)
def test_arbitrary_text_gives_a_command_or_parse_error(text: str, now: datetime, zone: object, limits: Limits) -> None:
    outcome(text, now, zone, limits)


@settings(max_examples=1500)
@given(GRAMMARISH, NOWS, ZONES, LIMITS)
def test_grammar_like_text_gives_a_command_or_parse_error(
    text: str, now: datetime, zone: object, limits: Limits
) -> None:
    outcome(text, now, zone, limits)


@settings(max_examples=20)
@given(st.text(ANY_CHAR, min_size=MAX_TEXT + 1, max_size=20 * MAX_TEXT))
def test_huge_text_is_refused(text: str) -> None:
    assert isinstance(outcome(text, datetime(2026, 1, 1, tzinfo=UTC), UTC, Limits()), ParseError)


GPU_NAMES = st.sampled_from([(name, m.key) for m in GPUS.values() for name in (m.key, *m.aliases)])
SHAPE_FORMS = st.sampled_from(["{g}x{n}", "{n}x{g}", "{g}:{n}", "{g} x {n}", "{g} x{n}", "{n} x {g}", "{G}X{n}"])
DURATIONS = st.tuples(st.integers(0, 71), st.integers(0, 59)).filter(lambda hm: hm != (0, 0))


def duration_word(hours: int, minutes: int) -> str:
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")


@given(GPU_NAMES, st.integers(1, 16), SHAPE_FORMS, DURATIONS, NOWS)
def test_valid_book_round_trips(
    gpu: tuple[str, str], count: int, form: str, hm: tuple[int, int], now: datetime
) -> None:
    name, key = gpu
    shape = form.format(g=name, G=name.upper(), n=count)
    book = parse(f"book {shape} {duration_word(*hm)}", now=now)
    assert isinstance(book, Book)
    assert book.shape == Shape(key, count)
    assert book.duration == timedelta(hours=hm[0], minutes=hm[1])


@given(st.lists(st.tuples(GPU_NAMES, st.integers(1, 16)), min_size=1, max_size=4), DURATIONS)
def test_alternatives_round_trip(shapes: list[tuple[tuple[str, str], int]], hm: tuple[int, int]) -> None:
    text = " or ".join(f"{name}x{count}" for (name, _), count in shapes)
    quote = parse(f"quote {text} {duration_word(*hm)}", now=datetime(2026, 1, 1, tzinfo=UTC))
    assert isinstance(quote, Quote)
    assert (quote.shape, *quote.alternatives) == tuple(Shape(key, count) for (_, key), count in shapes)


@given(NOWS, LIMITS)
def test_night_start_is_in_the_future_or_now(now: datetime, limits: Limits) -> None:
    book = parse("book h100 --night", now=now, limits=limits)
    assert book.night
    if book.start_at is not None:
        assert now < book.start_at <= now + timedelta(days=1)
        local = book.start_at.astimezone(limits.team_tz).time()
        assert local.replace(second=0, microsecond=0) == limits.night_start.replace(second=0, microsecond=0) or (
            _dst_shifted(local, limits.night_start)
        )


def _dst_shifted(local: time, expected: time) -> bool:
    """A night start that falls in a DST gap is shifted by the zone; accept an hour either way."""
    minutes = abs((local.hour * 60 + local.minute) - (expected.hour * 60 + expected.minute))
    return minutes in (60, 23 * 60)


HOUR_WORDS = st.sampled_from(["h", "hr", "hrs", "hour", "hours", " h", " hours", "小时", " 小时", "个小时"])
MINUTE_WORDS = st.sampled_from(["m", "min", "mins", "minutes", " min", " minutes", "分钟", " 分钟"])


@given(GPU_NAMES, st.integers(1, 16), DURATIONS, HOUR_WORDS, MINUTE_WORDS, st.booleans(), st.booleans())
def test_spelled_out_requests_round_trip(
    gpu: tuple[str, str], count: int, hm: tuple[int, int], hour: str, minute: str, count_first: bool, with_for: bool
) -> None:
    name, key = gpu
    shape = f"{count} {name}" if count_first else f"{name} x{count}"
    spelled = " ".join(part for part in (f"{hm[0]}{hour}" if hm[0] else "", f"{hm[1]}{minute}" if hm[1] else "")
                       if part)
    book = parse(f"book {shape} {'for ' if with_for else ''}{spelled}", now=datetime(2026, 1, 1, tzinfo=UTC))
    assert isinstance(book, Book)
    assert book.shape == Shape(key, count)
    assert book.duration == timedelta(hours=hm[0], minutes=hm[1])
