"""Times as the reader reads them: in their Slack time zone (the team's when Slack does not say), zone named.

Every moment a person reads (a booking's start, an expiry warning's end, `/gpu status`, an extension, a digest)
goes through `moment_for(tr, moment)`: `tr` is the reader's translator, which carries their zone
(bot.i18n.translator_for, bot.context.BotContext.tr_for). English names the zone by its abbreviation
(`2026-11-03 09:00 CST`, `EDT` in summer) or its UTC offset when the zone has none (`UTC+08:00`); Chinese puts
the zone's CLDR name first, as Chinese text does (`北京时间 2026-11-03 09:00`, `北美东部夏令时间 …`), and UTC or an
offset after the time (`2026-11-03 01:00 UTC`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

from babel.dates import get_timezone_name

__all__ = ["format_moment", "moment_for", "zone_of"]

_BEIJING = {"Asia/Shanghai", "Asia/Chongqing", "Asia/Chungking", "Asia/Harbin", "PRC"}  # 北京时间, as people say


def zone_of(tr: object) -> tzinfo:
    """The time zone a translator's reader is in (UTC for a translator that does not say)."""
    return getattr(tr, "zone", None) or UTC


def moment_for(tr: object, moment: datetime | None, *, date: bool = True) -> str:
    """`moment` in the reader's zone and language (`?` when there is none); `date=False` shows only the time."""
    if moment is None:
        return "?"
    return format_moment(moment, zone_of(tr), getattr(tr, "locale", "en"), date=date)


def format_moment(moment: datetime, zone: tzinfo, locale: str = "en", *, date: bool = True) -> str:
    """`2026-11-03 09:00 CST` (English) or `北京时间 2026-11-03 09:00` (Chinese) for an aware `moment` in
    `zone`; a naive moment is taken as UTC."""
    local = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(zone)
    clock = f"{local:%Y-%m-%d %H:%M}" if date else f"{local:%H:%M}"
    if locale.startswith("zh"):
        name = _zh_zone(local, zone)
        return f"{clock} {name}" if name.startswith("UTC") else f"{name} {clock}"
    return f"{clock} {_en_zone(local)}"


def _key(zone: tzinfo) -> str:
    return getattr(zone, "key", None) or ("UTC" if zone is UTC else str(zone))


def _en_zone(local: datetime) -> str:
    """The zone's abbreviation (`CST`, `EDT`, `UTC`), or its offset (`UTC+08:00`) when it has none (`+08`)."""
    name = local.tzname() or ""
    if name.isalpha():
        return name
    return "UTC" + _offset(local.utcoffset() or timedelta(0))


def _zh_zone(local: datetime, zone: tzinfo) -> str:
    """北京时间 for China, UTC for UTC, else the CLDR name (`北美东部夏令时间`), else the offset."""
    key = _key(zone)
    if key in _BEIJING:
        return "北京时间"
    if key in ("UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Zulu", "Zulu"):
        return "UTC"
    try:
        name = get_timezone_name(local, "long", locale="zh_CN")
    except (LookupError, ValueError, AttributeError):
        name = ""
    return name if name and not name.startswith(("GMT", "UTC", "+", "-")) else "UTC" + _offset(local.utcoffset()
                                                                                                 or timedelta(0))


def _offset(offset: timedelta) -> str:
    minutes = int(offset.total_seconds() // 60)
    sign, minutes = ("+" if minutes >= 0 else "-"), abs(minutes)
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
