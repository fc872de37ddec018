"""No English left for a Chinese reader: every notice, and every reply drawn from plain data, rendered in zh-CN
shows no English word outside the allowlist (GPU and cloud names, commands and options, config keys, units the
glossary keeps). `KNOWN_LEFT` lists what is still English; it may only shrink (see docs/testing.md)."""

from __future__ import annotations

import re
from dataclasses import fields, is_dataclass, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpubot.bot.booking_quote import booking_lines
from gpubot.bot.home_view import HomeData, home_view
from gpubot.bot.i18n import locale_of, translator_for
from gpubot.bot.notices import render
from gpubot.bot.replies import cancelled_text, period_name, released_text, user_error_text
from gpubot.bot.views import extension_text, repeated_extension_text, status_lines
from gpubot.domain import grammar
from gpubot.domain.booking_view import BookingView
from gpubot.domain.budget import BudgetLine
from gpubot.domain.errors import NothingSells, Refused, UserError
from gpubot.domain.extension import Extension, plan_extension
from gpubot.domain.help import TOPICS, help_text
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import (
    NOTICE_TYPES,
    BookingProgress,
    BookingReleased,
    BookingRequested,
    ProgressStep,
    QuoteBudgetRow,
    ReleaseWhy,
    StepKind,
)
from gpubot.domain.periods import PERIODS
from gpubot.domain.probe_failures import KINDS, internal_error, no_answer, provider_said
from gpubot.domain.report_text import GroupTotal, budget_text, cost_table, group_name, waiting_text

from tests.unit.domain.test_notices import _sample

ZH = translator_for("zh")
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
DATA = "甲"  # what a person typed or a provider said: not ours to translate
KEEP = {"currency": "USD", "gpu": "a100", "wanted_gpu": "h100", "provider": "lambda", "region": "us-east-1",
        "period": "2026-11-02", "month": "2026-11", "scope": "team", "to": "U1", "by": "U2"}
ALLOWED = {  # names and units a Chinese reader sees as they are (glossary: commands and options stay English)
    "GPU", "GPUs", "CUDA", "UTC", "GiB", "GB", "US", "CN", "JP", "HK", "SSH", "ssh", "Slack", "gpubot", "PNG",
    "lambda", "runpod", "sim", "autodl", "aws", "gcp", "azure", "us", "east", "west",
    "spot", "Release", "UALICE", "C",
    "AutoDL", "UUID", "AMI", "ID", "U",  # an image's kinds; a Slack user id starts with U
    "MIG",  # NVIDIA's Multi-Instance GPU, named so in Chinese documentation too
}
# English still shown to a Chinese reader. Fix a word, then drop it here (the check fails until you do).
KNOWN_LEFT: set[str] = set()

_NOT_WORDS = re.compile(
    r"`[^`]*`|\*/gpu [^*]*\*"  # code: commands, options, shapes as typed; a command's usage in help
    r"|<[^>]*>|&\w+;"  # mentions, links and Slack's escapes
    r"|\b\w+(?:[._]\w+)+\b(?:\s*=\s*\w+)?"  # config keys (acquire.give_up_after, over_budget = block)
    r"|\b[A-Za-z]+\d[\w-]*"  # GPU names and shapes (a100, h100x8, rtx4090)
    r"|\b(?:user|project):\S+"  # a budget's scope as commands take it
    r"|\b(?:GPU|卡)-?h\b")  # GPU-hours as the glossary writes them
_WORD = re.compile(r"[A-Za-z]+")


def english_words(text: str) -> list[str]:
    """The English words in `text` a Chinese reader would have to read."""
    return [w for w in _WORD.findall(_NOT_WORDS.sub(" ", text)) if w not in ALLOWED]


def _data(value):
    """The notice (or row) with every free-text field a person's or provider's words (or a realistic name), its
    steps one of every kind."""
    values = {}
    for f in fields(value):
        now = getattr(value, f.name)
        if isinstance(now, str) and f.name not in ("state", "why", "outcome", "then", "severity"):
            values[f.name] = KEEP.get(f.name, DATA)
        elif isinstance(now, tuple) and now and isinstance(now[0], ProgressStep):
            values[f.name] = _steps()
        elif isinstance(now, tuple) and now and isinstance(now[0], str):
            values[f.name] = (DATA, DATA)
        elif isinstance(now, tuple) and now and isinstance(now[0], tuple):  # a digest's rows
            values[f.name] = tuple(tuple(_cell(cell) for cell in row) for row in now)
        elif isinstance(now, tuple) and now and is_dataclass(now[0]):
            values[f.name] = tuple(_data(row) for row in now)
    return replace(value, **values)


def _cell(cell):
    """A digest row's cell as a person's or provider's words; rows inside it (a failed booking's attempts) keep
    their outcome kinds, which the bot words."""
    if isinstance(cell, str):
        return DATA
    if isinstance(cell, tuple) and cell and isinstance(cell[0], tuple):
        return tuple((DATA, DATA, "no_capacity") for _row in cell)
    return cell


def _steps() -> tuple[ProgressStep, ...]:
    common = dict(provider="lambda", region="us-east-1", elapsed=timedelta(hours=1, minutes=57, seconds=3),
                  limit=timedelta(minutes=29, seconds=57), checks=3, cost=Decimal("3.98"), currency="USD", other=12,
                  gpu="a100", count=2, wanted_gpu="h100", wanted_count=4, samples=5, night=timedelta(hours=6),
                  night_samples=3, days=7, suggest_night=True, detail=DATA)
    steps = [ProgressStep(kind, **common) for kind in StepKind if kind != StepKind.TEXT]
    steps += [ProgressStep(StepKind.LAUNCH_FAILED, outcome=o, **common)
              for o in ("capacity", "quota", "auth", "invalid", "error", "unknown")]
    steps += [ProgressStep(StepKind.LAUNCH_FAILED, outcome="image_refused", then=t, allowed=(DATA,), **common)
              for t in ("owners", "projects")]
    steps += [ProgressStep(StepKind.INTERRUPTED, then=t, **common) for t in ("resume", "nothing_left", "notify")]
    steps += [ProgressStep(StepKind.BOOT_ABANDONED, outcome=o, **common) for o in ("not_ready", "vanished", "burst")]
    steps += [ProgressStep(StepKind.HELD, at_least=True, too_late=True, **common)]
    steps += [ProgressStep(StepKind.REPLACING, then=t, **common) for t in ("failed", "cancelled", "released")]
    return tuple(steps)


def _notices():
    for cls in NOTICE_TYPES.values():
        yield _data(_sample(cls))
    yield BookingProgress(to="U1", booking_id=3, gpu="a100", count=2, trail=_steps(), notes=_steps())
    for why in ReleaseWhy:
        yield _data(replace(_sample(BookingReleased), why=why.value, by=""))
    yield replace(_data(_sample(BookingReleased)), why=ReleaseWhy.RELEASED.value)
    for state in ("requested", "queued", "scheduled", "pending_approval", "denied", "launching"):
        yield replace(_data(_sample(BookingRequested)), state=state)


def _booking(state: BookingState, **changes) -> Booking:
    values = {"id": 2, "owner": "UALICE", "gpu": "a100", "count": 4, "duration": timedelta(hours=6),
              "state": state, "requested_at": NOW - timedelta(minutes=3)} | changes
    return Booking(**values)


QUOTED = BookingRequested(to="UALICE", booking_id=2, gpu="a100", count=4, duration=timedelta(hours=6),
                          hourly=Decimal("1.99"), total=Decimal("47.76"), currency="USD", provider="lambda",
                          region="us-east-1", estimate=Decimal("47.76"),
                          budget=(QuoteBudgetRow("team", Decimal(1000), Decimal(100)),
                                  QuoteBudgetRow("user:UALICE", Decimal(10), Decimal(9))))

REFUSED = ["book 5", "book a100x4 5", "book a100 80g x2", "quote 4卡 a100", "book a100x4 6h30", "extend 1 90",
           "book a100x4 6h --at tomorrow", "cost yesterday", "bogus", "book zz100x4 2h", "book a100x4 99d",
           "book a100x999 2h", "watch h100x8 --for 2h", "release abc", "budget set", "book a100x4 2h --max-price x"]


def _replies():
    for state in BookingState:
        booking = _booking(state, provider="lambda", region="us-east-1", price_per_gpu_hour=Decimal("1.99"),
                           currency="USD", started_at=NOW - timedelta(hours=1), ends_at=NOW + timedelta(hours=5),
                           released_at=NOW, start_at=NOW + timedelta(hours=20, minutes=50))
        yield "\n".join(booking_lines(BookingView(booking, QUOTED, Decimal("1.99"), Decimal("47.76"), "USD"), ZH))
        yield waiting_text(booking, NOW, ZH.gettext)
    placed = [_booking(state, provider="lambda", region="us-east-1", started_at=NOW, ends_at=NOW + timedelta(hours=6),
                       start_at=NOW + timedelta(hours=20)) for state in BookingState]
    yield status_lines(placed, True, ZH)
    hot = placed[0].with_(id=7, state=BookingState.ACTIVE)
    for ready in (NOW, None):  # a booking being replaced, by one ready and by one still waiting
        yield status_lines([hot, hot.with_(id=8, replaces=7, ready_at=ready, started_at=ready)], False, ZH,
                           timedelta(minutes=30))
    yield status_lines([], True, ZH)
    yield status_lines([], False, ZH)
    extension = Extension(timedelta(hours=1), NOW + timedelta(hours=7), timedelta(hours=7), timedelta(hours=6), True)
    yield extension_text(placed[0], extension, Decimal("2.42"), [("team", Decimal(36), Decimal(20))], "USD", ZH)
    yield repeated_extension_text(placed[0], ZH)
    for topic in (None, *TOPICS):
        yield help_text(topic, ZH.gettext)
    yield cancelled_text(_booking(BookingState.CANCELLED), ZH)
    yield released_text(_booking(BookingState.RELEASED, started_at=NOW - timedelta(hours=1, minutes=57),
                                 released_at=NOW), "US$3.98", ZH)
    rows = [GroupTotal("甲", Decimal("12.5"), Decimal(3), Decimal(1), Decimal("0.5")),
            GroupTotal("(none)", Decimal(1), Decimal(1), Decimal(0), Decimal(0))]
    total = GroupTotal("total", Decimal("13.5"), Decimal(4), Decimal(1), Decimal("0.5"))
    for by in ("user", "project", "provider", "gpu"):
        yield from (ZH.gettext("Spend, {period}, by {group}").format(period=period_name(period, ZH),
                                                                     group=group_name(by, ZH.gettext))
                    for period in PERIODS)  # the /gpu cost title
        yield f"```{cost_table(rows, total, by, 'USD', ZH.gettext, locale_of(ZH))}```"  # as /gpu cost shows it
    yield budget_text("team", Decimal(100), Decimal(3), Decimal("3.98"), Decimal(18), [50, 80], "USD", ZH.gettext,
                      locale_of(ZH))
    yield budget_text("user:UALICE", Decimal(100), Decimal(0), Decimal(0), Decimal(0), [], "USD", ZH.gettext,
                      locale_of(ZH))
    for text in REFUSED:
        try:
            grammar.parse(text, now=NOW)
        except UserError as exc:
            yield user_error_text(exc, ZH)
    yield from _home_texts(placed)
    yield from _refusals()
    for by, ends in ((timedelta(0), 5), (timedelta(hours=3), 5), (timedelta(hours=3), 6)):
        try:
            plan_extension("#2", NOW, NOW + timedelta(hours=ends), by, timedelta(hours=6), False)
        except UserError as exc:
            yield user_error_text(exc, ZH)


def _home_texts(placed: list[Booking]):
    """Every text of App Home (headers, sections, buttons, contexts), with a booking in every state."""
    budgets = [BudgetLine("team", Decimal(1000), Decimal(100), Decimal(50)),
               BudgetLine("user:UALICE", Decimal(10), Decimal(9), Decimal(3))]
    for queue in ([(1, placed[0])] * 25, []):
        data = HomeData("UALICE", NOW, "USD", bookings=placed * 3, queue=queue, budgets=budgets if queue else [])
        for block in home_view(data, ZH).to_dict()["blocks"]:
            yield (block.get("text") or {}).get("text", "")
            yield from ((e.get("text") or {}).get("text", "") if isinstance(e.get("text"), dict) else e.get("text", "")
                        for e in block.get("elements", []))


STATE_REFUSALS = ["#{booking} is already {state}.", "#{booking} is {state}; there is nothing to release.",
                  "#{booking} is {state}; only running bookings can be extended.",
                  "#{booking} is {state}; only a running booking can be replaced.",
                  "#{booking} was already decided (it is {state})."]


def _refusals():
    """Refusals naming a state, and clouds that could not say (each kind of failure, their own words as data)."""
    for template in STATE_REFUSALS:
        yield from (user_error_text(Refused(template, booking=2, state=state.value), ZH) for state in BookingState)
    for state in ("active", "fired", "cancelled", "expired"):
        yield user_error_text(Refused("Watch #{watch} is already {state}.", watch=2, state=state), ZH)
    failures = [("lambda", no_answer(5)), ("aws", internal_error("KeyError")), ("gcp", DATA),
                *((name, provider_said(kind, DATA)) for name, kind in zip(("sim", "runpod") * 4, KINDS, strict=True)),
                ("azure", provider_said("quota", ""))]
    yield user_error_text(NothingSells("b200", 1, "B200", failures=failures), ZH)


def _shown() -> list[str]:
    texts = []
    for notice in _notices():
        rendered = render(notice, ZH)
        upload = rendered.upload and (rendered.upload.title, rendered.upload.comment)
        texts += [t for t in (rendered.message and rendered.message.get("text"), rendered.booking_line,
                              *(upload or ())) if t]
    return texts + list(_replies())


def test_a_chinese_reader_finds_no_english_left():
    shown = _shown()
    left: dict[str, int] = {}
    where: dict[str, str] = {}
    for text in shown:
        for word in english_words(text):
            left[word] = left.get(word, 0) + 1
            where.setdefault(word, text[:160])
    print(f"zh check: {len(shown)} strings checked, {sum(left.values())} English words found "
          f"({len(left)} distinct)")
    new = {w: where[w] for w in left if w not in KNOWN_LEFT}
    assert not new, "English left for a Chinese reader:\n" + "\n".join(f"{w!r} in {t!r}" for w, t in new.items())
    gone = set(KNOWN_LEFT) - set(left)
    assert not gone, f"no longer English, drop them from KNOWN_LEFT: {sorted(gone)}"


def test_chinese_is_punctuated_as_chinese_and_writes_dollars_us():
    """No space after `。` (between sentences; a trail's ` → ` is its own separator), none before `%`; US dollars
    are `US$` (CLDR's zh form) everywhere, never a bare `$`."""
    odd = [m.group(0) for text in _shown() for m in re.finditer(r".{0,20}(?:。 (?!→)|\d %|(?<!US)\$\d)", text)]
    assert not odd


_CODE = re.compile(r"```.*?```|`[^`]*`|\*/gpu [^*]*\*", re.DOTALL)  # tables, commands, usage keep their spacing
_HAN = "[\u4e00-\u9fff]"
_SPACED = re.compile(rf"(?!{DATA}){_HAN} +(?!{DATA}){_HAN}"  # a space between two Chinese characters
                     rf"|(?:{_HAN}|[）」”])[*_~]*[:;,!?]"  # ASCII punctuation after Chinese (or bold Chinese)
                     r"| [，。；：！？、）]"  # a space before Chinese punctuation
                     r"|[，；：！？、）」”] (?!→)")  # or after it (`。 →` is a trail's separator)


def spacing_faults(text: str) -> list[str]:
    """Where `text` (outside code) is spaced or punctuated as English inside Chinese. DATA stands for a value
    that may be Latin (a project, a person), so a space next to it is not counted."""
    plain = _CODE.sub("`…`", text)
    return [plain[max(m.start() - 12, 0):m.end() + 12] for m in _SPACED.finditer(plain)]


def test_chinese_is_spaced_as_chinese():
    """`1 小时 4 分钟内`, `团队预订后`, `预算：`: no space between two Chinese characters, no ASCII `:` after one."""
    faults = [f for text in _shown() for f in spacing_faults(text)]
    assert not faults, "spaced or punctuated as English:\n" + "\n".join(sorted(set(faults)))


def test_the_spacing_check_sees_spaces_and_ascii_punctuation():
    assert len(spacing_faults("在 1 小时 4 分钟 内没有等到；团队 预订后")) == 2
    assert spacing_faults("预算: US$3") and spacing_faults("*本月至今（2026-11）*: 已支出")
    assert spacing_faults("已释放 。") and spacing_faults("（无应答） 试试")
    assert spacing_faults("运行 1 小时 4 分钟后释放 `/gpu 续期 1`，甲 将达到 US$3。```项目  支出```") == []


def test_the_check_sees_english_and_lets_names_and_commands_through():
    assert english_words("已释放（its time was up），运行 6h") == ["its", "time", "was", "up", "h"]
    assert english_words("在 lambda us-east-1 预订 4× a100，`/gpu book a100x4 6h` (acquire.give_up_after)") == []
