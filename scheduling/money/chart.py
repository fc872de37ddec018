"""The digest's chart as PNG bytes: this month's spend against the budget and the month-end forecast (top), and
the spend of each day against the daily budget pace (bottom). Legends sit outside the data; each axis is scaled
to the spend, so a quiet month is not a row of dots under a far-off budget line (the budget is then named in
words instead)."""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from gpubot.domain.money import format_money

__all__ = ["ChartData", "spend_chart", "spend_figure"]

log = logging.getLogger(__name__)

FAR = 4.0  # a budget line more than FAR× above the highest figure would flatten the data: it is named instead
_SPEND, _FORECAST, _BUDGET, _BARS = "#1f77b4", "#ff7f0e", "#d62728", "#9ecae1"


@dataclass(frozen=True)
class ChartData:
    """What the chart shows: each day's spend so far, the monthly budget and forecast, the month's length."""

    daily: Sequence[tuple[date, Decimal]]
    limit: Decimal
    forecast: Decimal
    days_in_month: int
    title: str
    currency: str

    @property
    def days(self) -> list[int]:
        """Day of the month of each figure."""
        return [d.day for d, _ in self.daily]

    @property
    def amounts(self) -> list[float]:
        """Each day's spend (floats only for drawing; every figure shown in text is Decimal)."""
        return [float(a) for _, a in self.daily]

    @property
    def running(self) -> list[float]:
        """Spend from the month's start to the end of each day."""
        amounts = self.amounts
        return [sum(amounts[: i + 1]) for i in range(len(amounts))]


def _compact(value: float, _position: object = None) -> str:
    """Tick labels people read at a glance: 0.25, 12, 480, 1.2k, 35k, 1.5M."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if value else "0"


def _budget(axes, level: Decimal, highest: float, label: str, currency: str) -> None:
    """The budget as a dashed line when it fits the scale of the data, else named in the corner."""
    if level <= 0:
        return
    named = f"{label} {format_money(level, currency)}"
    if highest > 0 and float(level) > FAR * highest:
        axes.text(0.99, 0.96, f"{named}: far above this scale", transform=axes.transAxes, ha="right", va="top",
                  color=_BUDGET, fontsize=9)
        axes.set_ylim(0, highest * 1.2)
        return
    axes.axhline(float(level), color=_BUDGET, linestyle="--", linewidth=1.5, label=named)
    axes.set_ylim(0, max(highest, float(level)) * 1.15 or 1)


def _month_to_date(axes, data: ChartData) -> None:
    axes.plot(data.days, data.running, color=_SPEND, marker="o", markersize=3, linewidth=2,
              label="spent, month to date")
    running = data.running
    if running:
        axes.plot([data.days[-1], data.days_in_month], [running[-1], float(data.forecast)], color=_FORECAST,
                  linestyle=":", linewidth=2, label=f"forecast {format_money(data.forecast, data.currency)}")
    _budget(axes, data.limit, max([*running, float(data.forecast), 0]), "budget", data.currency)
    axes.set_ylabel(data.currency)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=9)


def _per_day(axes, data: ChartData) -> None:
    axes.bar(data.days, data.amounts, color=_BARS, edgecolor=_SPEND, label="spent that day")
    _budget(axes, data.limit / data.days_in_month, max([*data.amounts, 0]), "budget per day", data.currency)
    axes.set_ylabel(data.currency)
    axes.set_xlabel("day of the month")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=9)


def _style(axes, data: ChartData) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    axes.set_xlim(0.5, data.days_in_month + 0.5)
    axes.set_xticks([1, *range(5, data.days_in_month, 5), data.days_in_month])
    axes.yaxis.set_major_locator(MaxNLocator(nbins=5, min_n_ticks=3))
    axes.yaxis.set_major_formatter(FuncFormatter(_compact))
    axes.grid(axis="y", color="#dddddd", linewidth=0.8)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def spend_figure(data: ChartData):
    """The chart as a matplotlib Figure of its own (never pyplot's global state: the scheduler runs threads)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9, 5.5), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    _month_to_date(top, data)
    _per_day(bottom, data)
    for axes in (top, bottom):
        _style(axes, data)
    figure.suptitle(data.title, fontsize=12)
    return figure


def spend_chart(data: ChartData) -> bytes | None:
    """The chart as PNG bytes; None without matplotlib (the `charts` extra)."""
    try:
        figure = spend_figure(data)
    except ImportError:
        log.warning("matplotlib is not installed (in gpubot's checkout: pip install '.[charts]'): "
                    "the digest has no chart")
        return None
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
