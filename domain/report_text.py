"""Cost and budget reports as text: pure renderers shared by Slack, the terminal and the digest."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal

from gpubot.domain.budget import percent
from gpubot.domain.costing import GroupTotal
from gpubot.domain.durations import format_duration
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.money import CENT, format_money

__all__ = ["budget_text", "cost_table", "hours", "waiting_text"]

_TENTH = Decimal("0.1")


def hours(value: Decimal) -> str:
    """GPU-hours to one decimal."""
    return f"{value.quantize(_TENTH, rounding=ROUND_HALF_UP):,}"


def cost_table(rows: Sequence[GroupTotal], total: GroupTotal, by: str, currency: str) -> str:
    """A fixed-width table: group, spend, GPU-hours, idle GPU-hours, idle waste, and a total line."""
    header = (by, "spend", "GPU-h", "idle GPU-h", "idle waste")
    body = [_cells(r, currency) for r in rows]
    foot = _cells(total, currency, name="total")
    widths = [max(len(line[i]) for line in [header, *body, foot]) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths,
                                                                                            strict=True)))
    rule = "-" * len(fmt(header))
    return "\n".join([fmt(header), rule, *(fmt(b) for b in body), rule, fmt(foot)])


def _cells(row: GroupTotal, currency: str, name: str | None = None) -> tuple[str, str, str, str, str]:
    return (name or row.name, format_money(row.spend, currency), hours(row.gpu_hours), hours(row.idle_gpu_hours),
            format_money(row.waste, currency))


def budget_text(scope: str, limit: Decimal, spent: Decimal, committed: Decimal, forecast: Decimal,
                crossed: Sequence[int], currency: str) -> str:
    """`team: $120.00 spent + $40.00 committed of $5,000.00 (3 %); forecast $900.00 (18 %); crossed 50 %`."""
    money = lambda amount: format_money(amount, currency)  # noqa: E731
    text = (f"{scope}: {money(spent)} spent + {money(committed)} committed of {money(limit)} "
            f"({percent(spent + committed, limit)} %); month-end forecast {money(forecast)} "
            f"({percent(forecast, limit)} %)")
    marks = ", ".join(f"{t} %" for t in crossed)
    return text + (f"; thresholds crossed: {marks}" if marks else "; no threshold crossed")


def cents(amount: Decimal) -> Decimal:
    """An amount rounded half-up to the cent, as every figure is shown."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def waiting_text(booking: Booking, now: datetime) -> str:
    """Where a waiting booking stands: `starts 2026-11-03 09:00 UTC (in 20h50m)` for a scheduled one, else
    `queued, waiting 2m10s`."""
    if booking.state == BookingState.SCHEDULED and booking.start_at:
        return f"starts {booking.start_at:%Y-%m-%d %H:%M} UTC (in {format_duration(booking.start_at - now)})"
    waited = format_duration(max(now - booking.requested_at, timedelta(0)))
    return f"{booking.state.value.replace('_', ' ')}, waiting {waited}"
