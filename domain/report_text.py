"""Cost and budget reports as text: pure renderers shared by Slack, the terminal and the digest.

Every word is marked with `N_` for the message catalogs (bot/locale); each renderer takes the reader's
`translate` (a gettext; English when not given) and applies it where the text is put together."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from gpubot.domain.budget import percent
from gpubot.domain.costing import GroupTotal
from gpubot.domain.durations import format_duration
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.money import CENT, format_money

__all__ = ["NONE", "budget_text", "cost_table", "group_name", "hours", "scope_name", "waiting_text"]

_TENTH = Decimal("0.1")


def N_(message: str) -> str:
    """Mark a message for the catalogs; it is translated where the text is put together."""
    return message


def _same(message: str) -> str:
    return message


def hours(value: Decimal) -> str:
    """GPU-hours to one decimal."""
    return f"{value.quantize(_TENTH, rounding=ROUND_HALF_UP):,}"


def cost_table(rows: Sequence[GroupTotal], total: GroupTotal, by: str, currency: str,
               translate: Callable[[str], str] = _same, locale: str = "en") -> str:
    """A fixed-width table: group, spend, GPU-hours, idle GPU-hours, idle waste, and a total line; columns are
    aligned by display width (a Chinese character takes two), money as the reader's language writes it."""
    header = (group_name(by, translate), translate(N_("spend")), translate(N_("GPU-h")),
              translate(N_("idle GPU-h")), translate(N_("idle waste")))
    body = [_cells(r, currency, locale, name=translate(NONE) if r.name == NONE else r.name) for r in rows]
    foot = _cells(total, currency, locale, name=translate(N_("total")))
    widths = [max(_width(line[i]) for line in [header, *body, foot]) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(_pad(c, w, left=i == 0) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))
    rule = "-" * _width(fmt(header))
    return "\n".join([fmt(header), rule, *(fmt(b) for b in body), rule, fmt(foot)])


NONE = N_("(none)")  # a cost with no project
_GROUPS = {"user": N_("user"), "project": N_("project"), "provider": N_("provider"), "gpu": N_("GPU"),
           "region": N_("region")}


def group_name(by: str, translate: Callable[[str], str] = _same) -> str:
    """What a cost report is grouped by, in the reader's words (`project` → 项目)."""
    return translate(_GROUPS[by]) if by in _GROUPS else by


def _width(text: str) -> int:
    """Columns `text` takes in a monospaced font: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text: str, width: int, left: bool) -> str:
    fill = " " * (width - _width(text))
    return text + fill if left else fill + text


def _cells(row: GroupTotal, currency: str, locale: str, name: str | None = None) -> tuple[str, str, str, str, str]:
    return (name or row.name, format_money(row.spend, currency, locale), hours(row.gpu_hours),
            hours(row.idle_gpu_hours), format_money(row.waste, currency, locale))


def budget_text(scope: str, limit: Decimal, spent: Decimal, committed: Decimal, forecast: Decimal,
                crossed: Sequence[int], currency: str, translate: Callable[[str], str] = _same,
                locale: str = "en") -> str:
    """`team: $120.00 spent + $40.00 committed of $5,000.00 (3 %); forecast $900.00 (18 %); crossed 50 %`."""
    money = lambda amount: format_money(amount, currency, locale)  # noqa: E731
    text = translate(N_("{scope}: {spent} spent + {committed} committed of {limit} ({percent} %); month-end "
                        "forecast {forecast} ({forecast_percent} %)")).format(
        scope=scope_name(scope, translate), spent=money(spent), committed=money(committed), limit=money(limit),
        percent=percent(spent + committed, limit), forecast=money(forecast), forecast_percent=percent(forecast, limit))
    marks = translate(N_(", ")).join(translate(N_("{percent} %")).format(percent=t) for t in crossed)
    return text + (translate(N_("; thresholds crossed: {marks}")).format(marks=marks) if marks
                   else translate(N_("; no threshold crossed")))


def scope_name(scope: str, translate: Callable[[str], str] = _same) -> str:
    """A budget's scope as the reader's language names it: `team` → 团队 (`user:U1`, `project:x` as written)."""
    return translate(N_("team")) if scope == "team" else scope


def cents(amount: Decimal) -> Decimal:
    """An amount rounded half-up to the cent, as every figure is shown."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def _utc(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def waiting_text(booking: Booking, now: datetime, translate: Callable[[str], str] = _same,
                 clock: Callable[[datetime], str] = _utc) -> str:
    """Where a waiting booking stands: `starts 2026-11-03 09:00 UTC (in 20h50m)` for a scheduled one (its start
    as `clock` shows it: the reader's zone), else `queued, waiting 2m10s`."""
    if booking.state == BookingState.SCHEDULED and booking.start_at:
        return translate(N_("starts {time} (in {left})")).format(time=clock(booking.start_at),
                                                                left=format_duration(booking.start_at - now,
                                                                                     translate))
    waited = format_duration(max(now - booking.requested_at, timedelta(0)), translate)
    # the state's words are the msgids bot.views names states with (`awaiting approval` → 等待审批)
    return translate(N_("{state}, waiting {waited}")).format(state=translate(booking.state.value.replace("_", " ")),
                                                            waited=waited)
