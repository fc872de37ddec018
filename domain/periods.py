"""Report periods for `/gpu cost`: their names, the words people write for them, and their bounds in a zone.

Periods are read in the team's time zone, as budgets are (a month of spend is the team's month), so that two
people asking for `yesterday` see the same figures. `week` runs from Monday (ISO weeks, as 本周 does).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo

from gpubot.domain.budget import month_bounds

__all__ = ["PERIODS", "PERIOD_WORDS", "period_bounds", "period_of"]

PERIODS = ("today", "yesterday", "week", "last-week", "month", "last-month")  # and a month: `2026-03`
PERIOD_WORDS: dict[str, str] = {
    "today": "today", "今天": "today", "今日": "today",
    "yesterday": "yesterday", "昨天": "yesterday", "昨日": "yesterday",
    "week": "week", "this week": "week", "本周": "week", "这周": "week", "這周": "week", "本星期": "week",
    "这星期": "week", "这个星期": "week",
    "last week": "last-week", "last-week": "last-week", "上周": "last-week", "上星期": "last-week",
    "上个星期": "last-week", "上個星期": "last-week",
    "month": "month", "this month": "month", "本月": "month", "这个月": "month", "這個月": "month",
    "last month": "last-month", "last-month": "last-month", "上月": "last-month", "上个月": "last-month",
    "上個月": "last-month",
}
_MONTH = re.compile(r"^(?P<y>[0-9]{4})(?:-|年)(?P<m>0?[1-9]|1[0-2])月?$")


def period_of(words: str) -> str | None:
    """The period a phrase names (`last week`, `上周`, `2026-03`, `2026年3月`), or None."""
    phrase = " ".join(words.lower().split())
    if phrase in PERIOD_WORDS:
        return PERIOD_WORDS[phrase]
    found = _MONTH.match(phrase)
    return f"{int(found['y']):04d}-{int(found['m']):02d}" if found else None


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _local_days(local: datetime, days: int) -> datetime:
    """Local midnight `days` after `local`'s day, in its zone (a DST change keeps it at midnight)."""
    day = _midnight(local).replace(tzinfo=None) + timedelta(days=days)
    return day.replace(tzinfo=local.tzinfo)


def period_bounds(period: str, now: datetime, tz: tzinfo) -> tuple[datetime, datetime]:
    """UTC bounds of a period (one of PERIODS, or `YYYY-MM`) as of `now` in zone `tz`; a current period ends now."""
    local = now.astimezone(tz)
    today = _local_days(local, 0)
    week = _local_days(local, -local.weekday())
    spans = {
        "today": (today, now), "yesterday": (_local_days(local, -1), today),
        "week": (week, now), "last-week": (_local_days(week, -7), week),
        "month": (month_bounds(now, tz)[0], now),
    }
    if period == "last-month":
        since = month_bounds(month_bounds(now, tz)[0] - timedelta(seconds=1), tz)[0]
        return since, month_bounds(now, tz)[0]
    if period in spans:
        since, until = spans[period]
        return since.astimezone(UTC), until.astimezone(UTC)
    first = datetime.strptime(period + "-01", "%Y-%m-%d").replace(tzinfo=tz)
    since, until, _ = month_bounds(first, tz)
    return since, until
