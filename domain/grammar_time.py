"""Start times for `/gpu book`: `--at` in the user's time zone and `--night` in the team's off-peak window.

`--at` is read by `grammar_moments` (the forms the docs list, in English and Chinese); text it does not know goes
to the caller's fuller reader when one is given (the bot's dateparser), and every answer is checked here: in the
future and at most AT_HORIZON ahead."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from gpubot.domain.grammar_moments import AT_EXAMPLE, read_moment, to_utc
from gpubot.domain.grammar_text import fail, shown
from gpubot.domain.grammar_types import Limits

__all__ = ["AT_HORIZON", "MomentReader", "resolve_at", "resolve_night"]

AT_HORIZON = timedelta(days=366)  # --at further ahead than this is refused
MomentReader = Callable[[str, datetime, tzinfo], "datetime | None"]
"""A fuller reader of moments for text the grammar's own forms do not cover: (text, now, zone) → an aware
moment, or None when it reads nothing. The bot passes one built on dateparser; the grammar checks its answer."""
_ANY_WORD = re.compile(r"[^\W\d_]")  # a letter or a CJK character: a bare `9` or `12-01` goes to no reader


def _plus_days(day: date, days: int) -> date:
    try:
        return day + timedelta(days=days)
    except OverflowError:
        raise fail("{day} is out of range", AT_EXAMPLE, day=day) from None


def _read(value: str, now: datetime, zone: tzinfo, fuller: MomentReader | None) -> datetime:
    moment = read_moment(value, now, zone)
    if moment is None and fuller is not None and _ANY_WORD.search(value):
        moment = fuller(value, now, zone)
    if moment is None:
        raise fail("`{value}` is not a start time (like `09:00`, `tomorrow 9am`, `mon 09:00`, `明天 9点`, "
                   "`周五下午3点` or `2026-12-01 09:00`)", AT_EXAMPLE, value=shown(value))
    return moment.astimezone(UTC)


def resolve_at(value: str, now: datetime, user_tz: tzinfo, fuller: MomentReader | None = None) -> datetime:
    """The UTC start for an `--at` value read in the user's zone (the grammar's forms, else `fuller`'s); past
    or far-off times are refused."""
    if not value.strip():
        raise fail("`--at` needs a time", AT_EXAMPLE)
    start = _read(value, now, user_tz, fuller)
    if start <= now:
        raise fail("`{value}` is already past (times are read in your time zone)", AT_EXAMPLE, value=shown(value))
    if start - now > AT_HORIZON:
        raise fail("`{value}` is more than {days} days ahead", AT_EXAMPLE, value=shown(value), days=AT_HORIZON.days)
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
    tonight = to_utc(local.date(), start, limits.team_tz)
    return tonight if tonight > now else to_utc(_plus_days(local.date(), 1), start, limits.team_tz)
