"""The one formatter of times a person reads: the reader's zone, named, in their language (DST included)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.notices import render
from gpubot.bot.times import format_moment, moment_for, zone_of
from gpubot.domain.notices import ExpiryWarning

WINTER = datetime(2026, 1, 5, 14, 0, tzinfo=UTC)
SUMMER = datetime(2026, 7, 5, 14, 0, tzinfo=UTC)


@pytest.mark.parametrize(("moment", "zone", "english", "chinese"), [
    (WINTER, "Asia/Shanghai", "2026-01-05 22:00 CST", "北京时间 2026-01-05 22:00"),
    (WINTER, "UTC", "2026-01-05 14:00 UTC", "2026-01-05 14:00 UTC"),
    (WINTER, "America/New_York", "2026-01-05 09:00 EST", "北美东部标准时间 2026-01-05 09:00"),
    (SUMMER, "America/New_York", "2026-07-05 10:00 EDT", "北美东部夏令时间 2026-07-05 10:00"),
    (WINTER, "Europe/Berlin", "2026-01-05 15:00 CET", "中欧标准时间 2026-01-05 15:00"),
    (SUMMER, "Europe/Berlin", "2026-07-05 16:00 CEST", "中欧夏令时间 2026-07-05 16:00"),
    (WINTER, "Asia/Singapore", "2026-01-05 22:00 UTC+08:00", "新加坡标准时间 2026-01-05 22:00"),
    (WINTER, "Asia/Kolkata", "2026-01-05 19:30 IST", "印度时间 2026-01-05 19:30"),
    (WINTER, "Etc/GMT-3", "2026-01-05 17:00 UTC+03:00", "2026-01-05 17:00 UTC+03:00"),
], ids=lambda value: value if isinstance(value, str) else None)
def test_a_moment_is_shown_in_the_zone_with_its_name(moment, zone, english, chinese):
    assert format_moment(moment, ZoneInfo(zone)) == english
    assert format_moment(moment, ZoneInfo(zone), "zh_CN") == chinese


def test_the_clock_changes_across_a_dst_change_in_the_readers_zone():
    """New York springs forward on 2026-03-08 at 02:00 local: an hour later reads three hours later."""
    zone = ZoneInfo("America/New_York")
    before = datetime(2026, 3, 8, 6, 30, tzinfo=UTC)
    assert format_moment(before, zone, date=False) == "01:30 EST"
    assert format_moment(before + timedelta(hours=1), zone, date=False) == "03:30 EDT"


def test_a_fixed_offset_and_a_naive_moment():
    assert format_moment(WINTER, timezone(timedelta(hours=-3, minutes=-30))) == "2026-01-05 10:30 UTC-03:30"
    assert format_moment(WINTER.replace(tzinfo=None), ZoneInfo("Asia/Shanghai")) == "2026-01-05 22:00 CST"


def test_the_translator_carries_its_readers_zone():
    shanghai = ZoneInfo("Asia/Shanghai")
    assert zone_of(ENGLISH) is UTC and moment_for(ENGLISH, WINTER) == "2026-01-05 14:00 UTC"
    assert moment_for(translator_for("en", shanghai), WINTER, date=False) == "22:00 CST"
    assert moment_for(translator_for("zh", shanghai), WINTER) == "北京时间 2026-01-05 22:00"
    assert translator_for("en") is ENGLISH and moment_for(ENGLISH, None) == "?"


def test_an_expiry_warning_names_the_end_in_the_readers_zone():
    warning = ExpiryWarning(to="UZHANG", booking_id=7, gpu="a100", count=1, left=timedelta(minutes=30),
                            ends_at=datetime(2026, 11, 2, 1, 30, tzinfo=UTC))
    shanghai = ZoneInfo("Asia/Shanghai")
    assert "(at 09:30 CST)" in render(warning, translator_for("en", shanghai)).message["text"]
    assert "（北京时间 09:30）" in render(warning, translator_for("zh", shanghai)).message["text"]
    assert "(at 01:30 UTC)" in render(warning, ENGLISH).message["text"]
