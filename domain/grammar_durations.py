"""Durations as people write them in a `/gpu` command: `6h`, `6hrs`, `6 hours`, `90 min`, `1 day`, `2h 30m`,
`for 6h`, and in Chinese `6小时`, `30分钟`, `1天`.

Words are first joined (`6` + `hours` → `6 hours`, `for 6h` → `6h`, `2h` + `30m` → `2h 30m`), then each joined
word is read. A unit given twice (`6h6h`, `6h 2h`) is refused rather than added up: it is almost always a typo.
"""

from __future__ import annotations

import re
from datetime import timedelta

from gpubot.domain.durations import format_duration
from gpubot.domain.grammar_text import fail, shown

__all__ = [
    "UNIT_NAMES",
    "drop_fillers",
    "duration_hint",
    "is_unit_word",
    "join_duration_words",
    "leading_number",
    "looks_like_duration",
    "parse_span",
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
_SPELLING = {spelling: unit for unit, (_size, spellings) in _UNITS.items() for spelling in spellings}
_UNIT = "|".join(sorted(map(re.escape, _SPELLING), key=len, reverse=True))  # longest first: `hrs` before `h`
_NUMBER = r"(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
_PART = re.compile(rf"({_NUMBER})\s*({_UNIT})")
_WHOLE = re.compile(rf"^(?:\s*{_NUMBER}\s*(?:{_UNIT})\s*)+$")
_BARE_NUMBER = re.compile(rf"^[+-]?{_NUMBER}$")
_FILLERS = ("for",)  # `for 6h` reads as `6h`


def is_unit_word(word: str) -> bool:
    """Whether a word is a unit on its own: `h`, `hours`, `min`, `天`."""
    return word.lower() in _SPELLING


def looks_like_duration(word: str) -> bool:
    """Whether a word is written like a duration (`6h`, `-2h`, `6 hours`, `6小时`), right or wrong in value."""
    return bool(_WHOLE.match(word.lower().lstrip("+-")))


def _join_if(words: list[str], together) -> list[str]:
    out: list[str] = []
    for word in words:
        if out and together(out[-1], word):
            out[-1] = f"{out[-1]} {word}"
        else:
            out.append(word)
    return out


def join_duration_words(words: list[str]) -> list[str]:
    """Words with each duration joined into one word: `6` `hours` → `6 hours`, `2h` `30m` → `2h 30m`."""
    numbers = _join_if(words, lambda previous, word: bool(_BARE_NUMBER.match(previous)) and is_unit_word(word))
    return _join_if(numbers, lambda previous, word: looks_like_duration(previous) and looks_like_duration(word))


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
    return [(number, _SPELLING[unit], unit) for number, unit in _PART.findall(word.lower())]


def _doubled(word: str, parts: list[tuple[str, str, str]], how: str) -> None:
    units = [unit for _number, unit, _written in parts]
    twice = next((unit for unit in units if units.count(unit) > 1), None)
    if twice:
        values = " and ".join(f"`{n}{w}`" for n, u, w in parts if u == twice)
        raise fail(f"`{shown(word)}` gives the {UNIT_NAMES[twice]} twice ({values}): give each unit once", how)


def _value(parts: list[tuple[str, str, str]], longest: timedelta) -> timedelta:
    try:
        return timedelta(seconds=round(sum(float(n) * _UNITS[u][0] for n, u, _w in parts)))
    except (OverflowError, ValueError):
        return longest + timedelta(seconds=1)


def parse_span(word: str, longest: timedelta, how: str) -> timedelta:
    """A duration word that must be more than zero and at most `longest`; a unit may appear once."""
    body = word.lower().lstrip("+-")
    limit = f"more than 0 and at most {format_duration(longest)}"
    if not _WHOLE.match(body):
        number = leading_number(word)
        units = f"{number}h, {number}m or {number}d" if number else "90m, 6h, 1d, 2h30m or 6 hours"
        raise fail(f"`{shown(word)}` is not a duration (give it a unit: {units})", how)
    parts = _parts(body)
    _doubled(word, parts, how)
    value = _value(parts, longest)
    if word.strip().startswith("-") or value <= timedelta(0):
        raise fail(f"A duration must be {limit}, not `{shown(word)}`", how)
    if value > longest:
        raise fail(f"`{shown(word)}` is too long: a duration must be {limit}", how)
    return value


def duration_hint(word: str, longest: timedelta) -> str | None:
    """The user's duration as an example shows it: the word when it is right, its first part when a unit is
    doubled, the longest allowed when it is too long, `6h` for a bare `6`; None when it is no duration."""
    body = word.lower().lstrip("+-")
    if _BARE_NUMBER.match(body):
        return f"{body}h"
    if not _WHOLE.match(body) or word.strip().startswith("-"):
        return None
    parts = _parts(body)
    if len({unit for _n, unit, _w in parts}) < len(parts):
        return parts[0][0] + parts[0][2]
    value = _value(parts, longest)
    if value <= timedelta(0):
        return None
    return word if value <= longest else format_duration(longest)
