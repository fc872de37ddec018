"""Report periods for `/gpu cost`: the words in both languages, and the bounds in the team's zone."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from gpubot.domain.periods import period_bounds, period_of

SHANGHAI = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 6, 3, 7, 20, tzinfo=UTC)  # Wednesday 15:20 in Shanghai


@pytest.mark.parametrize(("words", "period"), [
    ("yesterday", "yesterday"), ("昨天", "yesterday"), ("last week", "last-week"), ("上周", "last-week"),
    ("LAST  Week", "last-week"), ("本月", "month"), ("this month", "month"), ("上个月", "last-month"),
    ("2026-03", "2026-03"), ("2026年3月", "2026-03"), ("today", "today"), ("本周", "week"), ("someday", None),
    ("2026-13", None)])
def test_period_words(words: str, period: str | None) -> None:
    assert period_of(words) == period


@pytest.mark.parametrize(("period", "since", "until"), [
    ("today", datetime(2026, 6, 2, 16, 0, tzinfo=UTC), NOW),
    ("yesterday", datetime(2026, 6, 1, 16, 0, tzinfo=UTC), datetime(2026, 6, 2, 16, 0, tzinfo=UTC)),
    ("week", datetime(2026, 5, 31, 16, 0, tzinfo=UTC), NOW),  # Monday 1 June, Shanghai midnight
    ("last-week", datetime(2026, 5, 24, 16, 0, tzinfo=UTC), datetime(2026, 5, 31, 16, 0, tzinfo=UTC)),
    ("month", datetime(2026, 5, 31, 16, 0, tzinfo=UTC), NOW),
    ("last-month", datetime(2026, 4, 30, 16, 0, tzinfo=UTC), datetime(2026, 5, 31, 16, 0, tzinfo=UTC)),
    ("2026-03", datetime(2026, 2, 28, 16, 0, tzinfo=UTC), datetime(2026, 3, 31, 16, 0, tzinfo=UTC)),
])
def test_bounds_in_the_teams_zone(period: str, since: datetime, until: datetime) -> None:
    assert period_bounds(period, NOW, SHANGHAI) == (since, until)


def test_last_month_in_january_is_last_years_december() -> None:
    assert period_bounds("last-month", datetime(2026, 1, 15, tzinfo=UTC), UTC) == (
        datetime(2025, 12, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC))
