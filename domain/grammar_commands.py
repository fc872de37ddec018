"""The smaller `/gpu` commands: status, queue, ids, extend, cost and the admin family."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta

from gpubot.domain.catalog import closest
from gpubot.domain.durations import format_duration
from gpubot.domain.grammar_durations import drop_fillers, duration_hint, join_duration_words, looks_like_duration
from gpubot.domain.grammar_options import split_options
from gpubot.domain.grammar_requests import Context
from gpubot.domain.grammar_text import EXAMPLES, N_, Token, fail, shown
from gpubot.domain.grammar_types import (
    AdminBudgetSet,
    AdminProvider,
    AdminRelease,
    Cancel,
    Command,
    Cost,
    Extend,
    Lang,
    Release,
    Status,
    Unwatch,
)
from gpubot.domain.grammar_values import parse_amount, parse_id, parse_project, parse_provider, parse_span
from gpubot.domain.periods import PERIOD_WORDS, PERIODS, period_of

__all__ = [
    "COST_BY",
    "COST_PERIODS",
    "Handler",
    "no_args",
    "parse_admin",
    "parse_cancel",
    "parse_cost",
    "parse_extend",
    "parse_lang",
    "parse_release",
    "parse_status",
    "parse_unwatch",
    "words_of",
]

Handler = Callable[[list[Token], Context], Command]
COST_PERIODS = PERIODS
COST_BY = ("user", "project", "provider", "gpu")
_USER_ID = re.compile(r"^[UW](?=[A-Z]*[0-9])[A-Z0-9]{2,20}$")


def words_of(args: list[Token], command: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """The positional words of a command that takes no options (or only `allowed` ones)."""
    positional, _ = split_options(args, allowed, command)
    return [t.text for t in positional]


_TAKES = {0: N_("`{command}` takes no arguments"), 1: N_("`{command}` takes one id")}


def _exactly(words: list[str], count: int, command: str) -> list[str]:
    if len(words) != count:
        raise fail(_TAKES[count], EXAMPLES.get(command, EXAMPLES["admin"]), command=command)
    return words


def no_args(command: str, result: Command) -> Handler:
    """A handler for a command that takes nothing (`queue`, `prices`...)."""

    def handler(args: list[Token], ctx: Context) -> Command:
        _exactly(words_of(args, command), 0, command)
        return result

    return handler


def parse_status(args: list[Token], ctx: Context) -> Status:
    """`/gpu status` (mine) or `/gpu status all` (everyone's)."""
    words = [w.lower() for w in words_of(args, "status")]
    if words in ([], ["mine"], ["me"]):
        return Status(everyone=False)
    if words in (["all"], ["everyone"], ["team"]):
        return Status(everyone=True)
    raise fail(f"`status` takes nothing or `all`, not `{shown(' '.join(words))}`", EXAMPLES["status"])


def _one_id(args: list[Token], command: str) -> int:
    words = _exactly(words_of(args, command), 1, command)
    return parse_id(words[0], EXAMPLES[command])


def parse_cancel(args: list[Token], ctx: Context) -> Cancel:
    """`/gpu cancel 12`."""
    return Cancel(_one_id(args, "cancel"))


def parse_release(args: list[Token], ctx: Context) -> Release:
    """`/gpu release 12`."""
    return Release(_one_id(args, "release"))


def parse_unwatch(args: list[Token], ctx: Context) -> Unwatch:
    """`/gpu unwatch 3`."""
    return Unwatch(_one_id(args, "unwatch"))


def _extend_example(words: list[str], ctx: Context) -> str:
    booking = next((w.lstrip("#") for w in words if w.lstrip("#").isdigit()), "12")
    hints = [hint for w in words[1:] if (looks_like_duration(w) or w.isdigit())
             and (hint := duration_hint(w, ctx.limits.max_duration))]
    fitting = format_duration(min(timedelta(hours=2), ctx.limits.max_duration))  # never an example the limit refuses
    return f"/gpu extend {booking} {hints[0] if hints else fitting}"


def parse_extend(args: list[Token], ctx: Context) -> Extend:
    """`/gpu extend 12 2h` (also `extend #12 by 2h`, `extend 12 +2h`, `extend 12 for 2 hours`)."""
    words = [w for w in join_duration_words(words_of(args, "extend")) if w.lower() != "by"]
    how = _extend_example(words, ctx)
    words = drop_fillers(words, how)
    if len(words) != 2:
        raise fail("`extend` takes an id and a duration", how)
    return Extend(parse_id(words[0], how), parse_span(words[1], ctx.limits.max_duration, how))


# What `/gpu lang` takes, as people write it, → en | zh | auto.
LANGUAGE_WORDS = {"en": "en", "english": "en", "英文": "en", "英语": "en", "zh": "zh", "zh-cn": "zh", "zh_cn": "zh",
                  "chinese": "zh", "中文": "zh", "简体中文": "zh", "汉语": "zh", "auto": "auto", "slack": "auto"}


def parse_lang(args: list[Token], ctx: Context) -> Lang:
    """`/gpu lang zh`, `/gpu lang en`, `/gpu lang auto` (follow Slack's language again), `/gpu lang` (ask)."""
    words = words_of(args, "lang")
    if not words:
        return Lang(None)
    word = words[0].lower()
    if len(words) == 1 and word in LANGUAGE_WORDS:
        return Lang(LANGUAGE_WORDS[word])
    raise fail("`lang` takes `zh` (简体中文), `en` (English) or `auto` (your Slack language), not `{given}`",
               EXAMPLES["lang"], closest(word, ("zh", "en", "auto")), given=shown(" ".join(words)))


def _cost_by(word: str) -> str:
    lowered = word.lower()
    by = lowered if lowered in COST_BY else lowered.removesuffix("s")
    if by not in COST_BY:
        raise fail(f"Cost cannot be split by `{shown(word)}` (user, project, provider or gpu)",
                   EXAMPLES["cost"], closest(lowered, COST_BY))
    return by


def _cost_period(words: list[str]) -> str:
    if not words:
        return "month"
    period = period_of(" ".join(words))
    if period is not None:
        return period
    raise fail("`{given}` is not a period (today, yesterday, week, last week, month, last month or YYYY-MM)",
               EXAMPLES["cost"], closest(" ".join(words).lower(), list(PERIOD_WORDS)), given=shown(" ".join(words)))


def parse_cost(args: list[Token], ctx: Context) -> Cost:
    """`/gpu cost [PERIOD] [by user|project|provider|gpu]` (`--by` works too); PERIOD is today, yesterday,
    week, last week, month (the default), last month or YYYY-MM, in English or Chinese (昨天, 上周, 本月)."""
    positional, options = split_options(args, ("by",), "cost")
    words = [t.text for t in positional]
    by = str(options["by"]) if "by" in options else None
    lowered = [w.lower() for w in words]
    if "by" in lowered:
        at = lowered.index("by")
        if by is not None or at + 1 >= len(words):
            raise fail("Give `by` once, followed by user, project, provider or gpu", EXAMPLES["cost"])
        by, words = words[at + 1], words[:at] + words[at + 2 :]
    return Cost(period=_cost_period(words), by=_cost_by(by) if by is not None else None)


def _scope(word: str) -> str:
    if word.lower() == "team":
        return "team"
    prefix, _, rest = word.partition(":")
    if prefix.lower() == "user" and _USER_ID.match(rest.strip()):
        return f"user:{rest.strip()}"
    if prefix.lower() == "project" and rest.strip():
        return f"project:{parse_project(rest, EXAMPLES['admin budget'])}"
    if _USER_ID.match(word):
        return f"user:{word}"
    if ":" not in word and word.strip() and word[0].isalnum() and word.isascii():
        return f"project:{parse_project(word, EXAMPLES['admin budget'])}"
    raise fail(f"`{shown(word)}` is not a budget scope (team, user:U123, @mention, project:NAME)",
               EXAMPLES["admin budget"])


def _admin_budget(words: list[str]) -> AdminBudgetSet:
    how = EXAMPLES["admin budget"]
    if words and words[0].lower() == "set":
        words = words[1:]
    if len(words) != 2:
        raise fail("`admin budget set` takes a scope and an amount", how)
    return AdminBudgetSet(_scope(words[0]), parse_amount(words[1], how))


def _admin_provider(words: list[str], ctx: Context) -> AdminProvider:
    how = EXAMPLES["admin provider"]
    if len(words) == 2 and words[1].lower() in ("pause", "resume"):
        words = [words[1], words[0]]
    if len(words) != 2 or words[0].lower() not in ("pause", "resume"):
        guess = closest(words[0], ("pause", "resume")) if words else None
        raise fail("`admin provider` takes `pause` or `resume` and a provider name", how, guess)
    return AdminProvider(words[0].lower(), parse_provider(words[1], ctx.limits, how))


def parse_admin(args: list[Token], ctx: Context) -> Command:
    """`/gpu admin release ID | provider pause|resume NAME | budget set SCOPE AMOUNT`."""
    words = words_of(args, "admin")
    action = words[0].lower() if words else ""
    if action == "release":
        return AdminRelease(parse_id(_exactly(words[1:], 1, "admin")[0], EXAMPLES["admin"]))
    if action == "provider":
        return _admin_provider(words[1:], ctx)
    if action == "budget":
        return _admin_budget(words[1:])
    guess = closest(action, ("release", "provider", "budget")) if action else None
    raise fail("`admin` takes `release`, `provider` or `budget set`", EXAMPLES["admin"], guess)
