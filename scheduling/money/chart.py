"""The digest's chart as PNG bytes: this month's spend against the budget and the month-end forecast (top), and
the spend of each day against the daily budget pace (bottom). Legends sit outside the data; each axis is scaled
to the spend, so a quiet month is not a row of dots under a far-off budget line (the budget is then named in
words instead). Its words come in the reader's language (`gettext`, `money`); Chinese is drawn with a CJK font
when one is installed, otherwise the chart is drawn in English (scheduling.money.chart_fonts)."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from decimal import Decimal

from gpubot.domain.money import format_money
from gpubot.scheduling.money.chart_fonts import cjk_font, installed_fonts, needs_cjk

__all__ = ["ChartData", "chart_words", "spend_chart", "spend_figure"]

log = logging.getLogger(__name__)

FAR = 4.0  # a budget line more than FAR× above the highest figure would flatten the data: it is named instead
FALLBACK = ("DejaVu Sans",)  # matplotlib's own font: digits, Latin, `$`, `¥`
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
    gettext: Callable[[str], str] = field(default=lambda message: message)  # the reader's language
    money: Callable[[Decimal, str], str] = format_money  # an amount in the reader's form (`US$1.00`)
    english_title: str = ""  # the title in English, drawn when the reader's words need a font not installed

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


def N_(message: str) -> str:
    """Mark a chart word for the catalogs (translated by `ChartData.gettext` where the chart is drawn)."""
    return message


_WORDS = (N_("spent, month to date"), N_("forecast {amount}"), N_("budget"), N_("budget per day"),
          N_("spent that day"), N_("day of the month"), N_("{budget}: far above this scale"))


def chart_words(data: ChartData) -> list[str]:
    """Every word the chart draws, in its reader's language (the title first)."""
    return [data.title, *(data.gettext(word) for word in _WORDS)]


def _compact(value: float, _position: object = None) -> str:
    """Tick labels people read at a glance: 0.25, 12, 480, 1.2k, 35k, 1.5M."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if value else "0"


def _budget(axes, level: Decimal, highest: float, label: str, data: ChartData) -> None:
    """The budget as a dashed line when it fits the scale of the data, else named in the corner."""
    if level <= 0:
        return
    named = f"{data.gettext(label)} {data.money(level, data.currency)}"
    if highest > 0 and float(level) > FAR * highest:
        axes.text(0.99, 0.96, data.gettext(N_("{budget}: far above this scale")).format(budget=named),
                  transform=axes.transAxes, ha="right", va="top", color=_BUDGET, fontsize=9)
        axes.set_ylim(0, highest * 1.2)
        return
    axes.axhline(float(level), color=_BUDGET, linestyle="--", linewidth=1.5, label=named)
    axes.set_ylim(0, max(highest, float(level)) * 1.15 or 1)


def _month_to_date(axes, data: ChartData) -> None:
    axes.plot(data.days, data.running, color=_SPEND, marker="o", markersize=3, linewidth=2,
              label=data.gettext(N_("spent, month to date")))
    running = data.running
    if running:
        axes.plot([data.days[-1], data.days_in_month], [running[-1], float(data.forecast)], color=_FORECAST,
                  linestyle=":", linewidth=2,
                  label=data.gettext(N_("forecast {amount}")).format(amount=data.money(data.forecast, data.currency)))
    _budget(axes, data.limit, max([*running, float(data.forecast), 0]), N_("budget"), data)
    axes.set_ylabel(data.currency)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=9)


def _per_day(axes, data: ChartData) -> None:
    axes.bar(data.days, data.amounts, color=_BARS, edgecolor=_SPEND, label=data.gettext(N_("spent that day")))
    _budget(axes, data.limit / data.days_in_month, max([*data.amounts, 0]), N_("budget per day"), data)
    axes.set_ylabel(data.currency)
    axes.set_xlabel(data.gettext(N_("day of the month")))
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


def drawn_as(data: ChartData, installed: Iterable[str]) -> tuple[ChartData, tuple[str, ...]]:
    """The chart as it can be drawn with the `installed` fonts, and the font families to draw it with: in the
    reader's words with a CJK font first when they need one and one is installed, else in English."""
    if not needs_cjk(chart_words(data)):
        return data, FALLBACK
    if font := cjk_font(installed):
        return data, (font, *FALLBACK)
    log.info("no CJK font installed (Debian: fonts-noto-cjk): the digest's chart is drawn in English")
    return replace(data, title=data.english_title or data.title, gettext=lambda message: message,
                   money=format_money), FALLBACK


def spend_figure(data: ChartData, installed: Iterable[str] | None = None):
    """The chart as a matplotlib Figure of its own (never pyplot's global state: the scheduler runs threads),
    drawn with the `installed` fonts (default: those matplotlib finds on this machine)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    data, families = drawn_as(data, installed_fonts() if installed is None else installed)

    figure = Figure(figsize=(9, 5.5), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    _month_to_date(top, data)
    _per_day(bottom, data)
    for axes in (top, bottom):
        _style(axes, data)
    figure.suptitle(data.title, fontsize=12)
    for text in figure.findobj(lambda artist: hasattr(artist, "set_fontfamily")):
        text.set_fontfamily(list(families))
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
