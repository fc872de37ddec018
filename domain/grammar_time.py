"""Start times for `/gpu book`: `--at` in the user's time zone and `--night` in the team's off-peak window."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from gpubot.domain.grammar_text import fail, shown
from gpubot.domain.grammar_types import Limits

__all__ = ["AT_HORIZON", "is_clock", "is_day", "resolve_at", "resolve_night"]

AT_HORIZON = timedelta(days=366)  # --at further ahead than this is refused
_HOW = "/gpu book a100x4 6h --at tomorrow 09:00"
_CLOCK = re.compile(r"^(?P<h>[0-9]{1,2})(?::(?P<m>[0-9]{2}))?(?P<ampm>am|pm)?$")
_DATE = re.compile(r"^(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})$")
_STAMP = re.compile(r"^(?P<day>[0-9]{4}-[0-9]{1,2}-[0-9]{1,2})t(?P<clock>.+)$")


def is_clock(word: str) -> bool:
    """Whether a word is a time of day: `09:00`, `9am`, `6:30pm`."""
    found = _CLOCK.match(word.lower())
    return bool(found and (found["m"] or found["ampm"]))


def is_day(word: str) -> bool:
    """Whether a word names a day: `today`, `tomorrow` or `2026-12-01`."""
    return word.lower() in ("today", "tomorrow") or bool(_DATE.match(word))


def _hour(hour: int, ampm: str | None) -> int:
    if not ampm:
        return hour
    if not 1 <= hour <= 12:
        return 99
    return hour % 12 + (12 if ampm == "pm" else 0)


def _clock(word: str) -> time:
    found = _CLOCK.match(word)
    if found and (found["m"] or found["ampm"]):
        hour, minute = _hour(int(found["h"]), found["ampm"]), int(found["m"] or 0)
        if hour <= 23 and minute <= 59:
            return time(hour, minute)
    raise fail(f"`{shown(word)}` is not a time of day (24h like 09:00, or 9am)", _HOW)


def _plus_days(day: date, days: int) -> date:
    try:
        return day + timedelta(days=days)
    except OverflowError:
        raise fail(f"{day} is out of range", _HOW) from None


def _day(word: str, today: date) -> date:
    if word in ("today", "tomorrow"):
        return _plus_days(today, int(word == "tomorrow"))
    found = _DATE.match(word)
    try:
        if found:
            return date(int(found["y"]), int(found["mo"]), int(found["d"]))
    except ValueError:
        pass
    raise fail(f"`{shown(word)}` is not a date (YYYY-MM-DD, today or tomorrow)", _HOW)


def _to_utc(day: date, clock: time, zone: tzinfo) -> datetime:
    try:
        return datetime.combine(day, clock).replace(tzinfo=zone).astimezone(UTC)
    except (OverflowError, ValueError):
        raise fail(f"{day} {clock:%H:%M} is out of range", _HOW) from None


def _words(value: str) -> list[str]:
    words = value.lower().split()
    stamp = _STAMP.match(words[0]) if len(words) == 1 else None
    return [stamp["day"], stamp["clock"]] if stamp else words


def _moment(words: list[str], now: datetime, zone: tzinfo) -> datetime:
    today = now.astimezone(zone).date()
    if len(words) == 1 and not is_day(words[0]):
        at = _to_utc(today, _clock(words[0]), zone)
        return at if at > now else _to_utc(_plus_days(today, 1), _clock(words[0]), zone)
    if len(words) != 2:
        raise fail(f"`{shown(' '.join(words))}` is not a start time", _HOW)
    return _to_utc(_day(words[0], today), _clock(words[1]), zone)


def resolve_at(value: str, now: datetime, user_tz: tzinfo) -> datetime:
    """The UTC start for an `--at` value read in the user's zone; past or far-off times are refused."""
    words = _words(value)
    if not words:
        raise fail("`--at` needs a time", _HOW)
    start = _moment(words, now, user_tz)
    if start <= now:
        raise fail(f"`{shown(value)}` is already past (times are read in your time zone)", _HOW)
    if start - now > AT_HORIZON:
        raise fail(f"`{shown(value)}` is more than {AT_HORIZON.days} days ahead", _HOW)
    return start


def _inside(clock: time, start: time, end: time) -> bool:
    if start <= end:
        return start <= clock < end
    return clock >= start or clock < end


def resolve_night(now: datetime, limits: Limits) -> datetime | None:
    """The UTC start of the next off-peak window in team time, or None when it is night already."""
    local = now.astimezone(limits.team_tz)
    start, end = limits.night_start.replace(tzinfo=None), limits.night_end.replace(tzinfo=None)
    if _inside(local.time(), start, end):
        return None
    tonight = _to_utc(local.date(), start, limits.team_tz)
    return tonight if tonight > now else _to_utc(_plus_days(local.date(), 1), start, limits.team_tz)
