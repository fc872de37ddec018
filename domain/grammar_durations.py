"""Durations as people write them in a `/gpu` command: `6h`, `6hrs`, `6 hours`, `90 min`, `1 day`, `2h 30m`,
`6h30`, `half an hour`, `an hour and a half`, `for 6h`, and in Chinese `6小时`, `30分钟`, `1天`, `半小时`, `一个半小时`,
`两天` (the everyday spellings are rewritten by `grammar_spoken`).

Words are first joined (`6` + `hours` → `6 hours`, `half` + `an` + `hour` → `half an hour`, `2h` + `30m` →
`2h 30m`: the longest run of words that reads as one duration), then each joined word is read. A unit given twice
(`6h6h`, `6h 2h`) is refused rather than added up: it is almost always a typo.
"""

from __future__ import annotations

import re
from datetime import timedelta

from gpubot.domain.durations import format_duration, span
from gpubot.domain.grammar_spoken import spoken_duration
from gpubot.domain.grammar_text import N_, fail, shown

__all__ = [
    "UNIT_NAMES",
    "drop_fillers",
    "duration_hint",
    "is_unit_word",
    "join_duration_words",
    "leading_number",
    "looks_like_duration",
    "parse_span",
    "unit_readings",
]

# unit letter → (seconds, the spellings people use for it); the letter itself is the first spelling
_UNITS: dict[str, tuple[int, tuple[str, ...]]] = {
    "w": (604800, ("w", "wk", "wks", "week", "weeks", "周", "星期", "个星期", "個星期")),
    "d": (86400, ("d", "day", "days", "天", "日")),
    "h": (3600, ("h", "hr", "hrs", "hour", "hours", "小时", "个小时", "小時", "個小時", "钟头", "个钟头")),
    "m": (60, ("m", "min", "mins", "minute", "minutes", "分", "分钟", "分鐘")),
    "s": (1, ("s", "sec", "secs", "second", "seconds", "秒", "秒钟")),
}
UNIT_NAMES = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
_TWICE = {  # one template per unit, so that each reads whole in every language
    "w": N_("`{word}` gives the weeks twice (`{first}` and `{second}`): give each unit once"),
    "d": N_("`{word}` gives the days twice (`{first}` and `{second}`): give each unit once"),
    "h": N_("`{word}` gives the hours twice (`{first}` and `{second}`): give each unit once"),
    "m": N_("`{word}` gives the minutes twice (`{first}` and `{second}`): give each unit once"),
    "s": N_("`{word}` gives the seconds twice (`{first}` and `{second}`): give each unit once"),
}
_SPELLING = {spelling: unit for unit, (_size, spellings) in _UNITS.items() for spelling in spellings}
_UNIT = "|".join(sorted(map(re.escape, _SPELLING), key=len, reverse=True))  # longest first: `hrs` before `h`
_NUMBER = r"(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
_PART = re.compile(rf"({_NUMBER})\s*({_UNIT})")
_WHOLE = re.compile(rf"^(?:\s*{_NUMBER}\s*(?:{_UNIT})\s*)+$")
_BARE_NUMBER = re.compile(rf"^[+-]?{_NUMBER}$")
_FILLERS = ("for",)  # `for 6h` reads as `6h`
_LONGEST_RUN = 7  # words one duration may span: `1 hour and a half`, `2 hours 30 minutes`


def is_unit_word(word: str) -> bool:
    """Whether a word is a unit on its own: `h`, `hours`, `min`, `天`."""
    return word.lower() in _SPELLING


def _body(word: str) -> str:
    """A duration word as the unit regexes read it: lowercased, unsigned, everyday spellings rewritten."""
    return spoken_duration(word.lower().lstrip("+-"))


def looks_like_duration(word: str) -> bool:
    """Whether a word is written like a duration (`6h`, `-2h`, `6 hours`, `6小时`, `半小时`), right or wrong in
    value."""
    return bool(_WHOLE.match(_body(word)))


def _run_at(words: list[str], start: int) -> int:
    """How many words from `start` make the longest duration (1 when none longer does)."""
    for length in range(min(_LONGEST_RUN, len(words) - start), 1, -1):
        if _BARE_NUMBER.match(words[start + length - 1]):
            continue  # a run never ends in a bare number (`6 4` is no duration)
        if looks_like_duration(" ".join(words[start:start + length])):
            return length
    return 1


def join_duration_words(words: list[str]) -> list[str]:
    """Words with each duration joined into one word: `6` `hours` → `6 hours`, `2h` `30m` → `2h 30m`,
    `half` `an` `hour` → `half an hour`."""
    out: list[str] = []
    i = 0
    while i < len(words):
        length = _run_at(words, i)
        out.append(" ".join(words[i:i + length]))
        i += length
    return out


def drop_fillers(words: list[str], how: str) -> list[str]:
    """The words without a `for` that stands before a duration (`for 6h`); a `for` before anything else is
    refused."""
    for i, word in enumerate(words):
        if word.lower() in _FILLERS and not (i + 1 < len(words) and looks_like_duration(words[i + 1])):
            raise fail(f"`{shown(word)}` needs a duration after it, like `{shown(word)} 6h`", how)
    return [word for word in words if word.lower() not in _FILLERS]


def leading_number(word: str) -> str | None:
    """The number a word starts with (`6` of `6x`), or None."""
    found = re.match(_NUMBER, word.lstrip("+-"))
    return found.group() if found else None


def _parts(word: str) -> list[tuple[str, str, str]]:
    """(number, unit letter, unit as written) of each part of a duration word."""
    return [(number, _SPELLING[unit], unit) for number, unit in _PART.findall(_body(word))]


def _doubled(word: str, parts: list[tuple[str, str, str]], how: str) -> None:
    units = [unit for _number, unit, _written in parts]
    twice = next((unit for unit in units if units.count(unit) > 1), None)
    if twice:
        first, second = [f"{n}{w}" for n, u, w in parts if u == twice][:2]
        raise fail(_TWICE[twice], how, word=shown(word), first=shown(first), second=shown(second))


def _value(parts: list[tuple[str, str, str]], longest: timedelta) -> timedelta:
    try:
        return timedelta(seconds=round(sum(float(n) * _UNITS[u][0] for n, u, _w in parts)))
    except (OverflowError, ValueError):
        return longest + timedelta(seconds=1)


def unit_readings(number: str, longest: timedelta, units: str = "hmd") -> list[str]:
    """A bare number with each unit of `units` that gives a duration within `longest`: `90` → [`90m`] when the
    longest is 72h (90h and 90d are over it)."""
    try:
        value = float(number)
    except ValueError:
        return []
    fits = [unit for unit in units if 0 < value * _UNITS[unit][0] <= longest.total_seconds()]
    return [f"{number}{unit}" for unit in fits]


def _no_unit(word: str, longest: timedelta, how: str) -> Exception:
    number = leading_number(word)
    readings = unit_readings(number, longest) if number else []
    if not number:
        return fail("`{word}` is not a duration (give it a unit: 90m, 6h, 1d, 2h30m or 6 hours)", how,
                    word=shown(word))
    if not readings:
        return fail("`{word}` is not a duration, and {number} hours, minutes or days would all be over the limit "
                    "of {longest}", how, word=shown(word), number=shown(number), longest=span(longest))
    if len(readings) == 1:
        return fail("`{word}` is not a duration (give it a unit: {unit})", how, word=shown(word), unit=readings[0])
    return fail("`{word}` is not a duration (give it a unit: {units} or {last})", how, word=shown(word),
                units=", ".join(readings[:-1]), last=readings[-1])


def parse_span(word: str, longest: timedelta, how: str) -> timedelta:
    """A duration word that must be more than zero and at most `longest`; a unit may appear once."""
    body = _body(word)
    limit = span(longest)
    if not _WHOLE.match(body):
        raise _no_unit(word, longest, how)
    parts = _parts(body)
    _doubled(word, parts, how)
    value = _value(parts, longest)
    if word.strip().startswith("-") or value <= timedelta(0):
        raise fail("A duration must be more than 0 and at most {limit}, not `{word}`", how, limit=limit,
                   word=shown(word))
    if value > longest:
        raise fail("`{word}` is too long: a duration must be more than 0 and at most {limit}", how,
                   word=shown(word), limit=limit)
    return value


def duration_hint(word: str, longest: timedelta) -> str | None:
    """The user's duration as an example shows it: the word when it is right, its first part when a unit is
    doubled, the longest allowed when it is too long, a bare `6` with the first unit that fits (`6h`, else
    `6m`); None when it is no duration."""
    body = _body(word)
    if _BARE_NUMBER.match(body):
        return next(iter(unit_readings(body, longest, "hm")), format_duration(longest))
    if not _WHOLE.match(body) or word.strip().startswith("-"):
        return None
    parts = _parts(body)
    if len({unit for _n, unit, _w in parts}) < len(parts):
        return parts[0][0] + parts[0][2]
    value = _value(parts, longest)
    if value <= timedelta(0):
        return None
    return word if value <= longest else format_duration(longest)
