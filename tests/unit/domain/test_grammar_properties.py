"""Property tests of the `/gpu` grammar: it never crashes, valid requests come back intact in every spelling the
docs list (English and Chinese), and a refusal's example is itself accepted under the same limits.

Deadlines are off: these tests are about what the grammar answers, and the shared test machines' load makes a
200 ms wall-clock deadline fail at random; `test_worst_case_text_is_parsed_in_little_cpu_time` bounds the cost."""

from __future__ import annotations

import contextlib
import re
import time as clock_time
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from gpubot.domain.catalog import GPUS
from gpubot.domain.errors import ParseError
from gpubot.domain.grammar import MAX_TEXT, Book, Command, Cost, Extend, Limits, Quote, Shape, Watch, parse
from gpubot.domain.periods import PERIODS, period_bounds
from hypothesis import example, given, settings
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


@settings(max_examples=400, deadline=None)
@given(st.text(ANY_CHAR, max_size=MAX_TEXT + 50), NOWS, ZONES, LIMITS)
def test_arbitrary_text_gives_a_command_or_parse_error(text: str, now: datetime, zone: object, limits: Limits) -> None:
    outcome(text, now, zone, limits)


@settings(max_examples=1500, deadline=None)
@given(GRAMMARISH, NOWS, ZONES, LIMITS)
def test_grammar_like_text_gives_a_command_or_parse_error(
    text: str, now: datetime, zone: object, limits: Limits
) -> None:
    outcome(text, now, zone, limits)


@settings(max_examples=20, deadline=None)
@given(st.text(ANY_CHAR, min_size=MAX_TEXT + 1, max_size=20 * MAX_TEXT))
def test_huge_text_is_refused(text: str) -> None:
    assert isinstance(outcome(text, datetime(2026, 1, 1, tzinfo=UTC), UTC, Limits()), ParseError)


GPU_NAMES = st.sampled_from([(name, m.key) for m in GPUS.values() for name in (m.key, *m.aliases)])
SHAPE_FORMS = st.sampled_from(["{g}x{n}", "{n}x{g}", "{g}:{n}", "{g} x {n}", "{g} x{n}", "{n} x {g}", "{G}X{n}"])
DURATIONS = st.tuples(st.integers(0, 71), st.integers(0, 59)).filter(lambda hm: hm != (0, 0))


def duration_word(hours: int, minutes: int) -> str:
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")


@settings(deadline=None)
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


@settings(deadline=None)
@given(st.lists(st.tuples(GPU_NAMES, st.integers(1, 16)), min_size=1, max_size=4), DURATIONS)
def test_alternatives_round_trip(shapes: list[tuple[tuple[str, str], int]], hm: tuple[int, int]) -> None:
    text = " or ".join(f"{name}x{count}" for (name, _), count in shapes)
    quote = parse(f"quote {text} {duration_word(*hm)}", now=datetime(2026, 1, 1, tzinfo=UTC))
    assert isinstance(quote, Quote)
    assert (quote.shape, *quote.alternatives) == tuple(Shape(key, count) for (_, key), count in shapes)


@settings(deadline=None)
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


@settings(deadline=None)
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


ZH_NUMERALS = ["", "一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二", "十三", "十四", "十五",
               "十六"]
CARD_FORMS = st.sampled_from(["{n}卡 {g}", "{g} {n}卡", "{g} {n}张", "{n}张{g}", "{n}卡{g}", "{g} {n}块", "{n} 卡 {g}"])


@settings(deadline=None)
@given(GPU_NAMES, st.integers(1, 16), CARD_FORMS, st.booleans(), DURATIONS)
def test_chinese_card_counts_round_trip(gpu: tuple[str, str], count: int, form: str, numeral: bool,
                                        hm: tuple[int, int]) -> None:
    name, key = gpu
    n = ZH_NUMERALS[count] if numeral and " " not in form.split("{n}")[1][:1] else str(count)
    book = parse(f"book {form.format(n=n, g=name)} {duration_word(*hm)}", now=datetime(2026, 1, 1, tzinfo=UTC))
    assert isinstance(book, Book)
    assert book.shape == Shape(key, count)


@settings(deadline=None)
@given(st.integers(1, 71), st.integers(1, 59), st.sampled_from(["h", "hr", "小时"]))
def test_minutes_after_hours_without_their_unit(hours: int, minutes: int, unit: str) -> None:
    book = parse(f"book a100x4 {hours}{unit}{minutes}", now=datetime(2026, 1, 1, tzinfo=UTC))
    assert book.duration == timedelta(hours=hours, minutes=minutes)


@settings(deadline=None)
@given(st.integers(0, 16), st.sampled_from(["小时", "个小时", "个钟头"]), st.booleans())
def test_chinese_hours_with_halves(hours: int, unit: str, half: bool) -> None:
    if hours == 0 and not half:
        return
    if half and hours:
        spelled = ZH_NUMERALS[hours] + ("个半" if "个" not in unit else "半") + unit.removeprefix("个")
    else:
        spelled = "半" + unit if half else ZH_NUMERALS[hours] + unit
    book = parse(f"book a100x4 {spelled}", now=datetime(2026, 1, 1, tzinfo=UTC))
    assert book.duration == timedelta(hours=hours, minutes=30 if half else 0), spelled


WEEKDAYS_EN = ["mon", "tuesday", "wed", "thursday", "fri", "saturday", "sunday"]
WEEKDAYS_ZH = ["周一", "星期二", "周三", "礼拜四", "周五", "星期六", "周日"]


@settings(deadline=None)
@given(NOWS, ZONES, st.integers(0, 6), st.integers(0, 23), st.integers(0, 59), st.booleans())
def test_a_weekday_with_a_time_is_its_next_occurrence(now: datetime, zone: object, weekday: int, hour: int,
                                                      minute: int, chinese: bool) -> None:
    day = (WEEKDAYS_ZH if chinese else WEEKDAYS_EN)[weekday]
    book = parse(f"book a100x4 6h --at {day} {hour:02d}:{minute:02d}", now=now, user_tz=zone)
    local = book.start_at.astimezone(zone)
    assert now < book.start_at <= now + timedelta(days=7, hours=2)
    assert local.weekday() == weekday
    assert (local.hour, local.minute) == (hour, minute) or _in_a_dst_gap(local, hour)


@settings(deadline=None)
@given(NOWS, ZONES, st.integers(0, 6), st.integers(0, 23))
def test_next_week_and_next_weekday(now: datetime, zone: object, weekday: int, hour: int) -> None:
    today = now.astimezone(zone).date()
    chinese = parse(f"book a100x4 --at 下{WEEKDAYS_ZH[weekday]} {hour}点", now=now, user_tz=zone)
    english = parse(f"book a100x4 --at next {WEEKDAYS_EN[weekday]} {hour}:00", now=now, user_tz=zone)
    next_monday = today + timedelta(days=7 - today.weekday())
    assert chinese.start_at.astimezone(zone).date() == next_monday + timedelta(days=weekday)
    assert 1 <= (english.start_at.astimezone(zone).date() - today).days <= 7
    assert english.start_at.astimezone(zone).weekday() == weekday


@settings(deadline=None)
@given(NOWS, ZONES, st.sampled_from(["明天", "tomorrow", "后天", "明早", "明晚"]), st.integers(1, 11))
def test_day_words_with_a_time(now: datetime, zone: object, word: str, hour: int) -> None:
    book = parse(f"book a100x4 --at {word}{hour}点", now=now, user_tz=zone) if word != "tomorrow" else \
        parse(f"book a100x4 --at {word} {hour}am", now=now, user_tz=zone)
    local = book.start_at.astimezone(zone)
    days = {"后天": 2}.get(word, 1)
    assert local.date() == now.astimezone(zone).date() + timedelta(days=days)
    assert local.hour in ((hour + 12) if word == "明晚" else hour, (hour + 13) if word == "明晚" else hour + 1)


def _in_a_dst_gap(local: datetime, hour: int) -> bool:
    return abs(local.hour - hour) == 1


@settings(deadline=None)
@given(NOWS, ZONES, st.sampled_from(PERIODS))
def test_periods_are_bounded_and_end_by_now(now: datetime, zone: object, period: str) -> None:
    since, until = period_bounds(period, now, zone)
    assert since < until <= now or (period in ("today", "week", "month") and since <= until == now)
    assert until - since <= timedelta(days=31, hours=1)
    if period == "yesterday":
        assert timedelta(hours=23) <= until - since <= timedelta(hours=25)
        assert since.astimezone(zone).date() == now.astimezone(zone).date() - timedelta(days=1)


@settings(deadline=None)
@given(st.sampled_from(["yesterday", "昨天", "last week", "上周", "本月", "this month", "today", "今天", "上个月"]),
       st.sampled_from(["", " by project", " --by gpu"]))
def test_period_words_in_both_languages(word: str, by: str) -> None:
    cost = parse(f"cost {word}{by}", now=datetime(2026, 1, 1, tzinfo=UTC))
    assert isinstance(cost, Cost) and cost.period in PERIODS


EXAMPLE = re.compile(r"Write it like `/gpu (.+)`\.$")


def _example_is_accepted(error: ParseError, now: datetime, limits: Limits) -> None:
    found = EXAMPLE.search(str(error))
    assert found, str(error)
    parse(found[1], now=now, limits=limits)  # raises if the suggestion proposes what the limits refuse


@settings(deadline=None)
@given(st.integers(-5, 10**7), st.integers(1, 64), st.integers(1, 24 * 14), st.sampled_from(["book a100x2", "extend 3",
                                                                                             "quote h100"]))
@example(-1, 2, 1, "extend 3")  # once suggested `/gpu extend 3 2h` under a 1 h limit
def test_a_refusals_example_is_accepted_under_the_same_limits(number: int, max_gpus: int, max_hours: int,
                                                             command: str) -> None:
    limits = Limits(max_gpus=max(max_gpus, 2), max_duration=timedelta(hours=max_hours))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    try:
        parsed = parse(f"{command} {number}", now=now, limits=limits)
    except ParseError as error:
        _example_is_accepted(error, now, limits)
        hours = re.findall(r"`([0-9]+)h`", str(error))
        assert all(timedelta(hours=int(h)) <= limits.max_duration for h in hours)
        counts = re.findall(r"x([0-9]+)`", str(error))
        assert all(int(c) <= limits.max_gpus for c in counts)
    else:
        assert isinstance(parsed, Extend | Book | Quote)


@settings(deadline=None)
@given(st.sampled_from(["a100", "A100"]), st.integers(1, 16), st.sampled_from(["80g", "80gb", "80G"]),
       st.integers(1, 400))
def test_a_shape_with_its_memory_apart_keeps_count_and_memory_in_the_example(
        name: str, count: int, memory: str, number: int) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    try:
        parse(f"quote {name} {memory} x{count} {number}", now=now)
    except ParseError as error:
        assert f"a100-80gx{count}" in str(error) or "a100-80g " in str(error)
        _example_is_accepted(error, now, Limits())


@settings(deadline=None)
@given(NOWS, st.integers(1, 72), st.integers(1, 24 * 7))
def test_a_watch_keeps_its_duration_apart_from_how_long_it_lives(now: datetime, hours: int, within: int) -> None:
    watch = parse(f"watch h100x8 {hours}h --within {within}h", now=now)
    assert isinstance(watch, Watch)
    assert (watch.duration, watch.within, watch.until) == (timedelta(hours=hours), timedelta(hours=within), None)


def test_worst_case_text_is_parsed_in_little_cpu_time() -> None:
    """CPU time, not wall time, so that a loaded machine does not fail it: the longest texts of the forms that
    make the grammar work hardest."""
    texts = ["book " + "6 h " * 490, "book " + "一个半 " * 390, "book " + "6 " * 995, "book " + "半" * 1990,
             "book a100 " + "1" * 1990, "book " + "half an " * 280, "book --at " + "next " * 398]
    for text in texts:
        started = clock_time.process_time()
        with contextlib.suppress(ParseError):
            parse(text[:MAX_TEXT], now=datetime(2026, 1, 1, tzinfo=UTC))
        assert clock_time.process_time() - started < 0.5, text[:40]
