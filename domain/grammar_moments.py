"""Moments as people write them after `--at` (and a watch's `--until`), in English and Chinese, read in a zone.

A moment is a day and a time of day; either may be left out, but not the time:
- days: `today` / 今天, `tomorrow` / 明天, 后天, `tonight` / 今晚, 明早, 明晚, `2026-12-01`, 12月1日 (its next
  occurrence), weekdays `mon`…`sun`,
  `monday`…`sunday`, 周一…周日 / 周天, 星期一…星期日 / 星期天, 礼拜一…礼拜天;
- a weekday alone is its next day whose time is still ahead (today counts); `next monday` is the first Monday
  after today; 下周一 is the Monday of next week (weeks start on Monday); `this friday` / 本周五 / 这周五 is the
  Friday of this week (refused when past);
- times: `09:00`, `9am`, `6:30pm`, `9点`, `9点半`, `9点30`, `9点30分`, `noon` / 中午, with 上午 / 早上 / 下午 /
  晚上 / 中午 / 凌晨 before them (下午3点 is 15:00), and evening days (今晚, 明晚, `tonight`) reading 1 to 11 as
  the evening (今晚8点 is 20:00);
- a time alone is its next occurrence.

`read_moment` returns None for text that is none of these forms, so the caller may hand it to a fuller reader
(the bot's, built on dateparser); a form it knows with a part wrong (a day without a time) is refused here.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from gpubot.domain.grammar_spoken import zh_digits
from gpubot.domain.grammar_text import fail, shown

__all__ = ["AT_EXAMPLE", "is_moment_word", "read_moment", "to_utc"]

AT_EXAMPLE = "/gpu book a100x4 6h --at tomorrow 09:00"
_WEEKDAYS_EN = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_WEEKDAY_EN = r"(?P<en>mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|sday|nesday|rsday|urday)?"
_WEEKDAY_ZH = r"(?P<zhweek>下个?|下個|本|这个?|這個?)?(?:周|週|星期|礼拜|禮拜)(?P<zh>[1-7日天])"
_DAY_WORDS = {"today": 0, "今天": 0, "今日": 0, "tomorrow": 1, "明天": 1, "明日": 1, "后天": 2, "後天": 2,
              "tonight": 0, "今晚": 0, "明晚": 1, "明早": 1}
_EVENING_DAYS = ("tonight", "今晚", "明晚")
_DAY_WORD = "|".join(sorted(_DAY_WORDS, key=len, reverse=True))
_DAY = (rf"(?P<word>{_DAY_WORD})|(?P<iso>[0-9]{{4}}-[0-9]{{1,2}}-[0-9]{{1,2}})"
        r"|(?P<zh_mo>[0-9]{1,2})月(?P<zh_d>[0-9]{1,2})[日号號]"
        rf"|(?:(?P<enweek>next|this)\s+)?{_WEEKDAY_EN}|{_WEEKDAY_ZH}")
_PART = r"(?P<part>上午|早上|早晨|中午|下午|傍晚|晚上|凌晨)"
_CLOCK = (r"(?P<h>[0-9]{1,2})(?::(?P<m>[0-9]{2}))?\s*(?P<ampm>am|pm)?"
          r"|(?P<zh_h>[0-9]{1,2})(?:点|點|时|時)(?:(?P<half>半)|(?P<zh_m>[0-9]{1,2})分?)?|(?P<noon>noon|midnight)")
_MOMENT = re.compile(rf"^(?:(?:{_DAY})(?:\s+|t)?(?:at\s+)?)?(?:{_PART}\s*)?(?:{_CLOCK})?$")
_WORD = re.compile(rf"^(?:{_DAY}|{_PART}|{_CLOCK}|next|this|at)$")


def is_moment_word(word: str) -> bool:
    """Whether one word can be part of a moment (`tomorrow`, `09:00`, `明天9点`, `next`), so that an unquoted
    `--at next monday 9am` is read whole; a bare number is not (it may be a count)."""
    text = zh_digits(word.lower())
    return not text.isdigit() and bool(text and (_WORD.match(text) or _MOMENT.match(text)))


def to_utc(day: date, clock: time, zone: tzinfo) -> datetime:
    """The UTC moment of a local day and time in `zone`."""
    try:
        return datetime.combine(day, clock).replace(tzinfo=zone).astimezone(UTC)
    except (OverflowError, ValueError):
        raise fail("{day} {clock} is out of range", AT_EXAMPLE, day=day, clock=f"{clock:%H:%M}") from None


def _hour(found: re.Match, evening: bool) -> tuple[int, int]:
    if found["noon"]:
        return (12, 0) if found["noon"] == "noon" else (0, 0)
    hour = int(found["h"] or found["zh_h"])
    minute = 30 if found["half"] else int(found["m"] or found["zh_m"] or 0)
    if found["ampm"]:
        hour = hour % 12 + (12 if found["ampm"] == "pm" else 0) if 1 <= hour <= 12 else 99
    part = found["part"]
    if (evening or part in ("下午", "傍晚", "晚上")) and 1 <= hour <= 11:
        hour += 12
    if part == "中午" and 1 <= hour <= 2:
        hour += 12
    return hour, minute


def _clock(found: re.Match, evening: bool, text: str) -> time | None:
    if not (found["h"] or found["zh_h"] or found["noon"]):
        return time(12, 0) if found["part"] == "中午" else None
    if found["h"] and not (found["m"] or found["ampm"] or found["part"] or found["word"] in _EVENING_DAYS):
        return None  # a bare `9` is no time (it may be a count); `9:00`, `9am` and `今晚 9` are
    hour, minute = _hour(found, evening)
    if hour > 23 or minute > 59:
        raise fail("`{text}` is not a time of day (24h like 09:00, or 9am, or 9点)", AT_EXAMPLE, text=shown(text))
    return time(hour, minute)


def _weekday(found: re.Match) -> int | None:
    if found["en"]:
        return _WEEKDAYS_EN.index(found["en"][:3])
    if found["zh"]:
        return 6 if found["zh"] in "日天7" else int(found["zh"]) - 1
    return None


def _day(found: re.Match, today: date, text: str) -> date | None:
    if found["word"]:
        return today + timedelta(days=_DAY_WORDS[found["word"]])
    if found["iso"]:
        try:
            return date(*map(int, found["iso"].split("-")))
        except ValueError:
            raise fail("`{text}` is not a date (YYYY-MM-DD)", AT_EXAMPLE, text=shown(text)) from None
    if found["zh_mo"]:
        return _month_day(int(found["zh_mo"]), int(found["zh_d"]), today, text)
    weekday = _weekday(found)
    if weekday is None:
        return None
    which = found["enweek"] or (found["zhweek"] or "")[:1]
    if which in ("next", "下"):
        monday = today - timedelta(days=today.weekday()) + timedelta(days=7)
        return monday + timedelta(days=weekday) if which == "下" else today + timedelta(
            days=(weekday - today.weekday() - 1) % 7 + 1)
    if which in ("this", "本", "这", "這"):
        return today + timedelta(days=weekday - today.weekday())
    return today + timedelta(days=(weekday - today.weekday()) % 7)  # the next such day, today included


def _month_day(month: int, day: int, today: date, text: str) -> date:
    """12月1日: that day this year, or next year's when this year's is past."""
    try:
        this_year = date(today.year, month, day)
        return this_year if this_year >= today else date(today.year + 1, month, day)
    except ValueError:
        raise fail("`{text}` is not a date (12月1日, or YYYY-MM-DD)", AT_EXAMPLE, text=shown(text)) from None


def read_moment(value: str, now: datetime, zone: tzinfo) -> datetime | None:
    """The UTC moment `value` names in `zone` (see the module doc), or None when it is none of these forms."""
    text = " ".join(zh_digits(value.lower()).split())
    found = _MOMENT.match(text)
    if not text or not found:
        return None
    today = now.astimezone(zone).date()
    day = _day(found, today, value)
    clock = _clock(found, found["word"] in _EVENING_DAYS, value)
    if clock is None:
        if day is None and not found["part"]:
            return None
        raise fail("`{text}` needs a time of day, like `{text} 09:00`", AT_EXAMPLE, text=shown(value))
    if day is not None:
        at = to_utc(day, clock, zone)
        lone_weekday = _weekday(found) is not None and not (found["enweek"] or found["zhweek"])
        return to_utc(day + timedelta(days=7), clock, zone) if lone_weekday and at <= now else at
    at = to_utc(today, clock, zone)
    return at if at > now else to_utc(today + timedelta(days=1), clock, zone)
