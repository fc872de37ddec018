"""Unit tests of the `/gpu` grammar: every accepted form and every class of mistake."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from gpubot.domain.errors import ParseError
from gpubot.domain.grammar import (
    MAX_TEXT,
    AdminBudgetSet,
    AdminProvider,
    AdminRelease,
    Book,
    Budget,
    Cancel,
    Cost,
    Extend,
    Help,
    Limits,
    OpenBookModal,
    Prices,
    Queue,
    Quote,
    Release,
    Shape,
    Status,
    Unwatch,
    Watch,
    Watches,
    parse,
)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # 14:00 in Berlin
BERLIN = ZoneInfo("Europe/Berlin")
LIMITS = Limits(providers=("lambda_cloud", "runpod", "aws"))


def run(text: str, **kwargs) -> object:
    kwargs.setdefault("now", NOW)
    kwargs.setdefault("limits", LIMITS)
    return parse(text, **kwargs)


def refused(text: str, **kwargs) -> ParseError:
    with pytest.raises(ParseError) as caught:
        run(text, **kwargs)
    assert "Write it like `/gpu" in str(caught.value)
    return caught.value


@pytest.mark.parametrize(
    "shape",
    ["a100x4", "4xa100", "a100:4", "a100 x 4", "a100 x4", "A100X4", "4 x a100", "ａ１００ｘ４", "a100×4", "a100*4"],
)
def test_shape_forms(shape: str) -> None:
    assert run(f"book {shape} 6h").shape == Shape("a100", 4)


@pytest.mark.parametrize(
    ("shape", "expected"),
    [("h100", Shape("h100", 1)), ("a100-80g x2", Shape("a100-80g", 2)), ("rtx4090x2", Shape("rtx4090", 2)),
     ("4090x2", Shape("rtx4090", 2)), ("a100–80g", Shape("a100-80g", 1)), ("a100x16", Shape("a100", 16))],
)
def test_shape_names_resolve_through_catalog(shape: str, expected: Shape) -> None:
    assert run(f"book {shape}").shape == expected


@pytest.mark.parametrize(
    ("word", "expected"),
    [("6h", timedelta(hours=6)), ("90m", timedelta(minutes=90)), ("1d", timedelta(days=1)),
     ("2h30m", timedelta(hours=2, minutes=30)), ("1.5h", timedelta(hours=1, minutes=30)), ("72h", timedelta(hours=72))],
)
def test_duration_forms(word: str, expected: timedelta) -> None:
    assert run(f"book a100x4 {word}").duration == expected


def test_duration_defaults_to_policy_and_may_come_first() -> None:
    assert run("book a100x4").duration == timedelta(hours=4)
    assert run("book a100x4", limits=Limits(default_duration=timedelta(hours=2))).duration == timedelta(hours=2)
    assert run("book 6h a100x4") == run("book a100x4 6h")


def test_alternatives_with_or() -> None:
    book = run("book a100x4 or h100x2 or rtx4090x8 6h")
    assert book.shape == Shape("a100", 4)
    assert book.alternatives == (Shape("h100", 2), Shape("rtx4090", 8))
    assert book.duration == timedelta(hours=6)


def test_book_alone_opens_the_form() -> None:
    assert run("book") == OpenBookModal()


def test_every_book_option() -> None:
    book = run('book a100x4 6h --spot --provider runpod --region us-east-1 --max-price 2.50 '
               '--project llm --note "llama fine-tune"')
    assert book == Book(Shape("a100", 4), timedelta(hours=6), spot=True, provider="runpod", region="us-east-1",
                        max_price=Decimal("2.50"), project="llm", note="llama fine-tune")


def test_options_with_equals_and_smart_quotes() -> None:
    book = run("book a100x4 --provider=RunPod --max-price=$3 --note=“two words” --project=llm")
    assert (book.provider, book.max_price, book.note, book.project) == ("runpod", Decimal("3"), "two words", "llm")


def test_unquoted_note_runs_to_the_next_option() -> None:
    book = run("book a100x4 --note fine tune llama --spot")
    assert (book.note, book.spot) == ("fine tune llama", True)


def test_any_provider_accepted_when_none_configured() -> None:
    assert run("book a100x4 --provider Lambda", limits=Limits()).provider == "lambda"


@pytest.mark.parametrize(
    ("at", "expected"),
    [("2026-12-01T09:00", datetime(2026, 12, 1, 8, 0, tzinfo=UTC)),   # winter: UTC+1
     ("2026-12-01 09:00", datetime(2026, 12, 1, 8, 0, tzinfo=UTC)),
     ("tomorrow 09:00", datetime(2026, 6, 2, 7, 0, tzinfo=UTC)),      # summer: UTC+2
     ("today 18:30", datetime(2026, 6, 1, 16, 30, tzinfo=UTC)),
     ("15:00", datetime(2026, 6, 1, 13, 0, tzinfo=UTC)),              # still ahead today
     ("09:00", datetime(2026, 6, 2, 7, 0, tzinfo=UTC)),               # passed: tomorrow
     ("9pm", datetime(2026, 6, 1, 19, 0, tzinfo=UTC))],
)
def test_at_forms_read_in_user_zone(at: str, expected: datetime) -> None:
    book = run(f"book a100x4 6h --at {at}", user_tz=BERLIN)
    assert book.start_at == expected
    assert book.start_at.tzinfo == UTC
    assert not book.night


@pytest.mark.parametrize("at", ["today 13:00", "2026-05-31 09:00", "today 14:00"])
def test_at_in_the_past_is_refused(at: str) -> None:
    assert "already past" in str(refused(f"book a100x4 --at {at}", user_tz=BERLIN))


@pytest.mark.parametrize("at", ["25:00", "tomorrow", "2026-02-30 09:00", "someday 09:00", "2099-01-01 09:00"])
def test_bad_at_is_refused(at: str) -> None:
    refused(f"book a100x4 --at {at}", user_tz=BERLIN)


def test_night_outside_window_starts_at_next_night_start_in_team_zone() -> None:
    limits = Limits(team_tz=BERLIN)
    book = run("book a100x4 8h --night", limits=limits)  # 14:00 Berlin
    assert book.start_at == datetime(2026, 6, 1, 21, 0, tzinfo=UTC)
    assert book.night


def test_night_after_midnight_window_start_uses_tomorrow() -> None:
    limits = Limits(night_start=time(1, 0), night_end=time(6, 0))
    assert run("book a100x4 --night", limits=limits).start_at == datetime(2026, 6, 2, 1, 0, tzinfo=UTC)


@pytest.mark.parametrize("now", [datetime(2026, 6, 1, 23, 30, tzinfo=UTC), datetime(2026, 6, 2, 3, 0, tzinfo=UTC)])
def test_night_inside_window_books_now(now: datetime) -> None:
    book = run("book a100x4 --night", now=now)
    assert (book.start_at, book.night) == (None, True)


def test_at_and_night_together_are_refused() -> None:
    refused("book a100x4 --at 15:00 --night")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", Help(None)), ("help", Help(None)), ("help book", Help("book")), ("book --help", Help("book")),
     ("status", Status(False)), ("ls", Status(False)), ("status all", Status(True)), ("ls all", Status(True)),
     ("queue", Queue()), ("prices", Prices()), ("budget", Budget()), ("watches", Watches()),
     ("cancel 12", Cancel(12)), ("cancel #12", Cancel(12)), ("release 7", Release(7)), ("unwatch #3", Unwatch(3)),
     ("extend 12 2h", Extend(12, timedelta(hours=2))), ("extend #12 by 30m", Extend(12, timedelta(minutes=30))),
     ("quote a100x4 6h", Quote(Shape("a100", 4), timedelta(hours=6))),
     ("quote a100x4 or h100x2", Quote(Shape("a100", 4), timedelta(hours=4), (Shape("h100", 2),))),
     ("cost", Cost()), ("cost today", Cost("today")), ("cost 2026-03 by project", Cost("2026-03", "project")),
     ("cost week --by gpu", Cost("week", "gpu")), ("cost by users", Cost("month", "user")),
     ("admin release 12", AdminRelease(12)), ("admin provider pause aws", AdminProvider("pause", "aws")),
     ("admin provider resume Lambda-Cloud", AdminProvider("resume", "lambda_cloud")),
     ("watch h100x8", Watch(Shape("h100", 8))),
     ("watch h100x8 --provider aws --for 2h", Watch(Shape("h100", 8), "aws", timedelta(hours=2))),
     ("watch h100x8 2h", Watch(Shape("h100", 8), None, timedelta(hours=2)))],
)
def test_subcommands(text: str, expected: object) -> None:
    assert run(text) == expected


@pytest.mark.parametrize(
    ("scope", "expected"),
    [("team", "team"), ("user:U123ABC", "user:U123ABC"), ("U123ABC", "user:U123ABC"), ("W0AB12", "user:W0AB12"),
     ("project:llm", "project:llm"), ("llm", "project:llm")],
)
def test_admin_budget_scopes(scope: str, expected: str) -> None:
    assert run(f"admin budget set {scope} 250.50") == AdminBudgetSet(expected, Decimal("250.50"))


@pytest.mark.parametrize("scope", ["<@U123ABC>", "<@U123ABC|alice>", "user:<@U123ABC>", "user:alice"])
def test_a_budget_is_for_a_bare_user_id_the_bot_turns_mentions_into(scope: str) -> None:
    assert "is not a budget scope" in str(refused(f"admin budget set {scope} 5"))


def test_unknown_subcommand_suggests_closest() -> None:
    error = refused("bok a100x4 6h")
    assert "did you mean `book`?" in str(error) and error.suggestion == "book"


def test_shape_without_subcommand_suggests_book() -> None:
    assert refused("a100x4 6h").suggestion == "book"


def test_unknown_gpu_names_it_and_suggests_closest() -> None:
    error = refused("book a10ox4 6h")
    assert "a10o" in str(error) and error.suggestion == "a100" and "did you mean `a100`" in str(error)


@pytest.mark.parametrize("shape", ["a100x0", "a100x17", "a100x-2", "0xa100", "a100x99999999999"])
def test_count_out_of_range_says_the_range(shape: str) -> None:
    assert "1 to 16" in str(refused(f"book {shape} 6h"))


def test_count_range_follows_limits() -> None:
    assert "1 to 8" in str(refused("book a100x9", limits=Limits(max_gpus=8)))


@pytest.mark.parametrize("word", ["0h", "0m", "-6h", "73h", "4d", "9" * 400 + "h"])
def test_zero_negative_or_oversized_duration_states_the_limit(word: str) -> None:
    assert "at most 3d" in str(refused(f"book a100x4 {word}"))


@pytest.mark.parametrize("text", ["book a100x4 6", "book a100x4 6h 2h", "extend 12 6x", "extend 12"])
def test_bad_durations_are_refused(text: str) -> None:
    refused(text)


def test_unknown_provider_suggests_closest() -> None:
    error = refused("book a100x4 --provider lamda")
    assert error.suggestion == "lambda_cloud" and "lamda" in str(error)


@pytest.mark.parametrize("price", ["abc", "NaN", "1e5", "inf"])
def test_price_not_a_number(price: str) -> None:
    assert "not a number" in str(refused(f"book a100x4 --max-price {price}"))


@pytest.mark.parametrize("price", ["0", "0.00"])
def test_price_must_be_positive(price: str) -> None:
    assert "more than 0" in str(refused(f"book a100x4 --max-price {price}"))


@pytest.mark.parametrize("text", ["cancel abc", "cancel 0", "cancel -3", "release 1.5", "cancel", "unwatch 1 2"])
def test_bad_ids_are_refused(text: str) -> None:
    refused(text)


@pytest.mark.parametrize(
    ("text", "suggestion"),
    [("book a100x4 --sopt", "--spot"), ("book a100x4 --max_prise 2", "--max-price"),
     ("book a100x4 --nigth", "--night")],
)
def test_unknown_option_suggests_closest(text: str, suggestion: str) -> None:
    assert refused(text).suggestion == suggestion


@pytest.mark.parametrize(
    "text",
    ["book a100x4 --spot --spot", "book a100x4 --provider", "book a100x4 --spot=yes", "quote a100x4 --spot",
     "watch a100 --spot", "book a100x4 h100", "book or a100", "book a100x4 or", "book --spot", "queue now",
     "status everyone please", "cost someday", "cost by colour", "admin", "admin provider stop aws",
     "admin budget set @bob 5", "admin budget set team lots", "watch a100 or h100", "book a100x4 --note \"\""],
)
def test_other_mistakes_are_refused_with_the_right_form(text: str) -> None:
    refused(text)


def test_text_over_the_limit_is_refused() -> None:
    assert str(MAX_TEXT) in str(refused("book a100x4 " + "x" * 4000))


@pytest.mark.parametrize("text", ["book\x00 a100x4\t6h", "book a100x4\x1b\x07 6h", "book a1\u200b00x4 6h\r\n"])
def test_control_characters_are_stripped(text: str) -> None:
    assert run(text) == run("book a100x4 6h")


@pytest.mark.parametrize(
    "text",
    ["ｂｏｏｋ ａ１００ｘ４ ６ｈ", "book\u00a0a100x4\u00a06h", "book a100x4 6h —spot", "book a100x4 6h –spot",
     "book a100x4 6h \u2014spot"],
)
def test_unicode_lookalikes_are_normalised(text: str) -> None:
    assert run(text).shape == Shape("a100", 4)


def test_naive_now_is_taken_as_utc() -> None:
    assert run("book a100x4 --at 15:00", now=NOW.replace(tzinfo=None)).start_at == datetime(2026, 6, 1, 15, tzinfo=UTC)
