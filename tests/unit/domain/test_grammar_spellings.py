"""The `/gpu` grammar as people write it: one table of every accepted spelling and one of every refusal with its
whole message. A refusal's hint quotes the user's own numbers and shape, never a fixed example's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from gpubot.domain.errors import ParseError
from gpubot.domain.grammar import Book, Extend, Limits, Quote, Shape, Watch, parse

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)
M = timedelta(minutes=1)
A100X4 = Shape("a100", 4)


def book(shape: Shape = A100X4, duration: timedelta = 6 * H, **kwargs) -> Book:
    return Book(shape, duration, **kwargs)


ACCEPTED: list[tuple[str, object]] = [
    # durations in English
    ("book a100x4 6h", book()),
    ("book a100x4 6hr", book()),
    ("book a100x4 6hrs", book()),
    ("book a100x4 6 hr", book()),
    ("book a100x4 6 hrs", book()),
    ("book a100x4 6 hours", book()),
    ("book a100x4 6hours", book()),
    ("book a100x4 1 hour", book(duration=H)),
    ("book a100x4 90m", book(duration=90 * M)),
    ("book a100x4 90 min", book(duration=90 * M)),
    ("book a100x4 90mins", book(duration=90 * M)),
    ("book a100x4 90 minutes", book(duration=90 * M)),
    ("book a100x4 1d", book(duration=24 * H)),
    ("book a100x4 1 day", book(duration=24 * H)),
    ("book a100x4 2 days", book(duration=48 * H)),
    ("book a100x4 1.5h", book(duration=90 * M)),
    ("book a100x4 1.5 hours", book(duration=90 * M)),
    ("book a100x4 2h30m", book(duration=150 * M)),
    ("book a100x4 2h 30m", book(duration=150 * M)),
    ("book a100x4 2 hours 30 minutes", book(duration=150 * M)),
    ("book a100x4 2 h 30 min", book(duration=150 * M)),
    ("book a100x4 for 6h", book()),
    ("book a100x4 for 6 hours", book()),
    ("book for 6h a100x4", book()),
    ("book 6 hours a100x4", book()),
    ("book a100x4 6H", book()),
    ("book a100x4 6 Hours", book()),
    # durations in Chinese (the glossary's units), with and without a space, fullwidth digits too
    ("book a100x4 6小时", book()),
    ("book a100x4 6 小时", book()),
    ("book a100x4 6个小时", book()),
    ("book a100x4 6小時", book()),
    ("book a100x4 30分钟", book(duration=30 * M)),
    ("book a100x4 30分", book(duration=30 * M)),
    ("book a100x4 1天", book(duration=24 * H)),
    ("book a100x4 2小时30分钟", book(duration=150 * M)),
    ("book a100x4 1.5小时", book(duration=90 * M)),
    ("book a100x4 ６小时", book()),
    # shapes
    ("book a100x4 6h", book()),
    ("book 4xa100 6h", book()),
    ("book 4x a100 6h", book()),
    ("book 4 x a100 6h", book()),
    ("book 4 a100 6h", book()),
    ("book 4 A100 6 hours", book()),
    ("book a100 x4 6h", book()),
    ("book a100 x 4 6h", book()),
    ("book a100:4 6h", book()),
    ("book a100 x4 for 6h", book()),
    ("book 2 4090 6h", book(Shape("rtx4090", 2))),
    ("book 8 h100 or 4 a100 6h", book(Shape("h100", 8), alternatives=(A100X4,))),
    ("book h100 6h", book(Shape("h100", 1))),
    # other commands take the same spellings
    ("quote 4 a100 6 hours", Quote(A100X4, 6 * H)),
    ("quote a100 x4 for 90 min", Quote(A100X4, 90 * M)),
    ("extend 12 2h", Extend(12, 2 * H)),
    ("extend 12 2 hours", Extend(12, 2 * H)),
    ("extend #12 by 30 min", Extend(12, 30 * M)),
    ("extend 12 for 2h", Extend(12, 2 * H)),
    ("extend 12 1小时", Extend(12, H)),
    ("watch h100x8 2 hours", Watch(Shape("h100", 8), None, 2 * H)),
    ("watch 8 h100 for 2h", Watch(Shape("h100", 8), None, 2 * H)),
    ("watch h100x8 --for 2 hours", Watch(Shape("h100", 8), None, 2 * H)),
    ("watch h100x8 --for 1天", Watch(Shape("h100", 8), None, 24 * H)),
    ("watch h100x8 2h --within 1天", Watch(Shape("h100", 8), None, 2 * H, within=24 * H)),
    ("watch h100x8 2h --within 2 days", Watch(Shape("h100", 8), None, 2 * H, within=48 * H)),
    ("watch h100x8 2h --until tomorrow 09:00", Watch(Shape("h100", 8), None, 2 * H, until=NOW.replace(day=2, hour=9))),
    ("watch 八卡 h100 半小时 --until 明天 9点",
     Watch(Shape("h100", 8), None, 30 * M, until=NOW.replace(day=2, hour=9))),
    # everyday durations: minutes after hours, halves, words (English and Chinese numerals)
    ("book a100x4 6h30", book(duration=6 * H + 30 * M)),
    ("book a100x4 6小时30", book(duration=6 * H + 30 * M)),
    ("book a100x4 half an hour", book(duration=30 * M)),
    ("book a100x4 half-hour", book(duration=30 * M)),
    ("book a100x4 an hour", book(duration=H)),
    ("book a100x4 an hour and a half", book(duration=90 * M)),
    ("book a100x4 one and a half hours", book(duration=90 * M)),
    ("book a100x4 two days", book(duration=48 * H)),
    ("book a100x4 for a day", book(duration=24 * H)),
    ("book a100x4 90min", book(duration=90 * M)),
    ("book a100x4 半小时", book(duration=30 * M)),
    ("book a100x4 半个小时", book(duration=30 * M)),
    ("book a100x4 一个半小时", book(duration=90 * M)),
    ("book a100x4 1个半小时", book(duration=90 * M)),
    ("book a100x4 两个小时", book(duration=2 * H)),
    ("book a100x4 十二小时", book(duration=12 * H)),
    ("book a100x4 一天半", book(duration=36 * H)),
    ("book a100x4 半天", book(duration=12 * H)),
    ("book a100x4 三十分钟", book(duration=30 * M)),
    # Chinese card counts, before or after the GPU, in digits or numerals
    ("book 4卡 a100 6h", book()),
    ("book a100 4卡 6h", book()),
    ("book a100 4张 6h", book()),
    ("book 四卡 a100 6h", book()),
    ("book a100 四张卡 6h", book()),
    ("book 4卡a100 6h", book()),
    ("book 四张a100 6小时", book()),
    ("book 八卡 h100 1小时", book(Shape("h100", 8), H)),
    ("book a100 两块 6h", book(Shape("a100", 2))),
    ("book 4 卡 a100 6h", book()),
    # memory written apart: the GPU of that memory, the count kept
    ("book a100 80g x2 6h", book(Shape("a100-80g", 2))),
    ("book a100 80gb x2 6h", book(Shape("a100-80g", 2))),
    ("book a100 80G 2卡 6h", book(Shape("a100-80g", 2))),
    ("book 2 a100 80g 6h", book(Shape("a100-80g", 2))),
    ("book a100x2 80g 6h", book(Shape("a100-80g", 2))),
    ("quote a100 80g x2 2h", Quote(Shape("a100-80g", 2), 2 * H)),
    # project names: the rule, lowercased
    ("book a100x4 6h --project llm", book(project="llm")),
    ("book a100x4 6h --project LLM-2026", book(project="llm-2026")),
    ("book a100x4 6h --project vision_v2.1", book(project="vision_v2.1")),
    ("book a100x4 6h --project " + "p" * 40, book(project="p" * 40)),
]

REFUSED: list[tuple[str, str]] = [
    # a unit given twice is a typo, never a sum
    ("book a100x4 6h6h",
     "`6h6h` gives the hours twice (`6h` and `6h`): give each unit once. Write it like `/gpu book a100x4 6h`."),
    ("book h100x2 3h 2h",
     "`3h 2h` gives the hours twice (`3h` and `2h`): give each unit once. Write it like `/gpu book h100x2 3h`."),
    ("book a100x4 2h30m15m",
     "`2h30m15m` gives the minutes twice (`30m` and `15m`): give each unit once. "
     "Write it like `/gpu book a100x4 2h`."),
    ("book a100x4 6小时6小时",
     "`6小时6小时` gives the hours twice (`6小时` and `6小时`): give each unit once. "
     "Write it like `/gpu book a100x4 6小时`."),
    ("extend 7 1h1h",
     "`1h1h` gives the hours twice (`1h` and `1h`): give each unit once. Write it like `/gpu extend 7 1h`."),
    ("book a100x4 6h a100x2 2h",
     "Give one duration, not 2 (`6h`, `2h`). Write it like `/gpu book a100x4 6h`."),
    # a bare number: both readings, in the user's own number and GPU
    ("book a100x4 6",
     "`6` has no unit: for 6 hours write `6h`, for 6 GPUs write `a100x6`. Write it like `/gpu book a100x4 6h`."),
    ("book h100x2 5",
     "`5` has no unit: for 5 hours write `5h`, for 5 GPUs write `h100x5`. Write it like `/gpu book h100x2 5h`."),
    ("book l40s 3",
     "`3` has no unit: for 3 hours write `3h`, for 3 GPUs write `l40sx3`. Write it like `/gpu book l40s 3h`."),
    ("quote 4 a100 7",
     "`7` has no unit: for 7 hours write `7h`, for 7 GPUs write `a100x7`. Write it like `/gpu quote a100x4 7h`."),
    # wrong values: the example keeps everything the user got right
    ("book a10ox4 5h", "Unknown GPU `a10o` – did you mean `a100`? Write it like `/gpu book a100x4 5h`."),
    ("book h100x99 5h",
     "A GPU count of 99 is out of range: ask for 1 to 16. Write it like `/gpu book h100x16 5h`."),
    ("book a100x4 99 hours",
     "`99 hours` is too long: a duration must be more than 0 and at most 3d. Write it like `/gpu book a100x4 3d`."),
    ("book a100x4 0 min",
     "A duration must be more than 0 and at most 3d, not `0 min`. Write it like `/gpu book a100x4 6h`."),
    ("book a100x4 for", "`for` needs a duration after it, like `for 6h`. Write it like `/gpu book a100x4 6h`."),
    ("book h100x2 for a100", "`for` needs a duration after it, like `for 6h`. Write it like `/gpu book h100x2 6h`."),
    ("extend 9 5x", "`5x` is not a duration (give it a unit: 5h or 5m). Write it like `/gpu extend 9 2h`."),
    ("extend 9", "`extend` takes an id and a duration. Write it like `/gpu extend 9 2h`."),
    ("watch h100x8 --within 9 days",
     "`9 days` is too long: a duration must be more than 0 and at most 7d. "
     "Write it like `/gpu watch h100x8 6h --within 7d`."),
    ("watch h100x8 --for 9 days",
     "`9 days` is too long: a duration must be more than 0 and at most 3d. Write it like `/gpu watch h100x8 3d`."),
    # suggestions keep the user's count and memory
    ("quote a100 80g x2 3",
     "`3` has no unit: for 3 hours write `3h`, for 3 GPUs write `a100-80gx3`. "
     "Write it like `/gpu quote a100-80gx2 3h`."),
    ("book a100 90g x2 2h",
     "Unknown GPU `a100-90g` – did you mean `a100-80g`? Write it like `/gpu book a100-80gx2 2h`."),
    ("book 四卡 2h",
     "`四卡` says how many GPUs but not which: for 4 A100s write `a100x4`. Write it like `/gpu book a100x4 2h`."),
    # never a reading over the limits (72h, 16 GPUs)
    ("extend 1 90", "`90` is not a duration (give it a unit: 90m). Write it like `/gpu extend 1 90m`."),
    ("extend 1 5000",
     "`5000` is not a duration, and 5000 hours, minutes or days would all be over the limit of 3d. "
     "Write it like `/gpu extend 1 3d`."),
    ("book a100x4 90", "`90` has no unit: for 90 minutes write `90m`. Write it like `/gpu book a100x4 90m`."),
    ("book a100x2 12", "`12` has no unit: for 12 hours write `12h`, for 12 GPUs write `a100x12`. "
     "Write it like `/gpu book a100x2 12h`."),
    ("book a100x2 20", "`20` has no unit: for 20 hours write `20h`. Write it like `/gpu book a100x2 20h`."),
    ("book a100x2 6000",
     "`6000` has no unit, and fits neither as a duration (more than 0, at most 3d) nor as a GPU count (1 to 16). "
     "Write it like `/gpu book a100x2 3d`."),
    ("book a100x4 三天半",
     "`三天半` is too long: a duration must be more than 0 and at most 3d. Write it like `/gpu book a100x4 3d`."),
    # start times: a day needs a time
    ("book a100x4 6h --at 明天",
     "`明天` needs a time of day, like `明天 09:00`. Write it like `/gpu book a100x4 6h --at tomorrow 09:00`."),
    ("book a100x4 6h --at mon",
     "`mon` needs a time of day, like `mon 09:00`. Write it like `/gpu book a100x4 6h --at tomorrow 09:00`."),
    ("book a100x4 6h --at 25点",
     "`25点` is not a time of day (24h like 09:00, or 9am, or 9点). "
     "Write it like `/gpu book a100x4 6h --at tomorrow 09:00`."),
    ("book a100x4 6h --at 今天 9点",
     "`今天 9点` is already past (times are read in your time zone). "
     "Write it like `/gpu book a100x4 6h --at tomorrow 09:00`."),
    # periods
    ("cost last wek",
     "`last wek` is not a period (today, yesterday, week, last week, month, last month or YYYY-MM) – did you mean "
     "`last week`? Write it like `/gpu cost month by user`."),
    # watches: the duration once, the watch's own time at most 7 days
    ("watch h100x8 2h --for 3h",
     "Give the duration once, either as a word or with `--for`. Write it like `/gpu watch h100x8 2h`."),
    ("watch h100x8 2h --within 1h --until 18:00",
     "Use `--within` or `--until`, not both. Write it like `/gpu watch h100x8 2h --within 6h`."),
    ("watch h100x8 2h --until 2026-06-20 09:00",
     "A watch lasts at most 7d; `--until 2026-06-20 09:00` is further. "
     "Write it like `/gpu watch h100x8 2h --within 6h`."),
    # project names outside the rule, the mention attempt first
    ("book a100x4 6h --project 'x```<!channel>```'",
     "`'x'''‹!channel›''''` is not a project name: use 1 to 40 lowercase letters, digits, `.`, `_` or `-`, starting "
     "with a letter or digit. Write it like `/gpu book a100x4 6h --project llm`."),
    ("book a100x4 6h --project -llm", "`--project` needs a value. Write it like `/gpu book a100x4 6h --project llm`."),
    ("book a100x4 6h --project=-llm",
     "`-llm` is not a project name: use 1 to 40 lowercase letters, digits, `.`, `_` or `-`, starting with a letter "
     "or digit. Write it like `/gpu book a100x4 6h --project llm`."),
    ("book a100x4 6h --project " + "p" * 41,
     f"`{'p' * 39}…` is not a project name: use 1 to 40 lowercase letters, digits, `.`, `_` or `-`, starting "
     "with a letter or digit. Write it like `/gpu book a100x4 6h --project llm`."),
    ("book a100x4 6h --project=\"my project\"",
     "`my project` is not a project name: use 1 to 40 lowercase letters, digits, `.`, `_` or `-`, starting "
     "with a letter or digit. Write it like `/gpu book a100x4 6h --project llm`."),
    ("admin budget set project:<!here> 5",
     "`‹!here›` is not a project name: use 1 to 40 lowercase letters, digits, `.`, `_` or `-`, starting with a "
     "letter or digit. Write it like `/gpu admin budget set team 5000`."),
]


def run(text: str) -> object:
    return parse(text, now=NOW, limits=Limits())


@pytest.mark.parametrize(("text", "expected"), ACCEPTED, ids=[text for text, _ in ACCEPTED])
def test_accepted_spellings(text: str, expected: object) -> None:
    assert run(text) == expected


@pytest.mark.parametrize(("text", "message"), REFUSED, ids=[text for text, _ in REFUSED])
def test_refusals_say_why_in_the_users_own_numbers(text: str, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        run(text)
    assert str(caught.value) == message


def test_the_old_fixed_hint_is_gone() -> None:
    """`4 a100 6h` used to be refused with a hint about `a100x6`, numbers the user never typed."""
    assert run("book 4 a100 6h") == book()
    with pytest.raises(ParseError) as caught:
        run("book 4 a100 3")
    assert "a100x6" not in str(caught.value) and "`a100x3`" in str(caught.value)


def test_table_size() -> None:
    """The figure for the issue note: how many spellings the tables pin down."""
    assert len(ACCEPTED) >= 60 and len(REFUSED) >= 20
