"""The digest's chart is readable at a glance: the budget line and the forecast are there, legends sit outside the
data, and each axis fits the month's spend, tiny or large (rendered with matplotlib, inspected as drawn)."""

from __future__ import annotations

import warnings
from dataclasses import replace
from datetime import date
from decimal import Decimal

import pytest
from gpubot.scheduling.money.chart import ChartData, spend_chart, spend_figure
from gpubot.scheduling.money.chart_fonts import cjk_font, installed_fonts

pytest.importorskip("matplotlib", reason="the charts extra: pip install -e '.[charts]'")


def month(per_day: str, days: int, limit: str, forecast: str) -> ChartData:
    daily = [(date(2026, 11, d), Decimal(per_day)) for d in range(1, days + 1)]
    return ChartData(daily, Decimal(limit), Decimal(forecast), 30, "Spend 2026-11", "USD")


def drawn(data: ChartData):
    figure = spend_figure(data)
    figure.canvas.draw()
    return figure, figure.axes


def labels(axes) -> list[str]:
    return [text.get_text() for text in axes.get_legend().get_texts()]


def test_a_normal_month_shows_spend_forecast_and_budget_with_legends_outside_the_data():
    figure, (top, bottom) = drawn(month("45", 12, "5000", "1500"))
    assert labels(top) == ["spent, month to date", "forecast $1,500.00", "budget $5,000.00"]
    assert labels(bottom) == ["budget per day $166.67", "spent that day"]
    renderer = figure.canvas.get_renderer()
    for axes in (top, bottom):
        legend, data_area = axes.get_legend().get_window_extent(renderer), axes.get_window_extent(renderer)
        assert legend.x0 >= data_area.x1  # to the right of the plot: it never covers a line
    assert 5000 < top.get_ylim()[1] < 6000 and top.get_xlim() == (0.5, 30.5)  # the whole month, the budget in range


def test_a_tiny_month_is_scaled_to_its_spend_and_names_the_far_budget():
    _figure, (top, bottom) = drawn(month("0.50", 10, "5000", "15"))
    assert top.get_ylim()[1] < 20 and bottom.get_ylim()[1] < 1  # not a row of dots under a line at 5,000
    corner = [text.get_text() for text in top.texts]
    assert corner == ["budget $5,000.00: far above this scale"]
    assert "budget $5,000.00" not in labels(top)


def test_a_large_month_keeps_the_budget_line_under_the_spend():
    _figure, (top, _bottom) = drawn(month("300", 20, "800", "9000"))
    assert "budget $800.00" in labels(top) and top.get_ylim()[1] >= 9000


def test_the_chart_is_a_png():
    assert spend_chart(month("40", 12, "5000", "1200")).startswith(b"\x89PNG\r\n\x1a\n")


def _zh(data: ChartData) -> ChartData:
    from gpubot.bot.i18n import money_for, translator_for

    zh = translator_for("zh")
    return replace(data, title="2026-11支出", english_title="Spend 2026-11", gettext=zh.gettext,
                   money=lambda amount, currency: money_for(zh, amount, currency))


def _drawn_quietly(data: ChartData, installed=None) -> tuple:
    """The chart drawn, with every warning matplotlib gave while drawing it (a missing glyph is one)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figure = spend_figure(data, installed)
        figure.canvas.draw()
    return figure, [str(w.message) for w in caught]


def test_a_chinese_chart_is_drawn_in_chinese_with_a_cjk_font_when_one_is_installed():
    data = _zh(month("45", 12, "5000", "1500"))
    figure = spend_figure(data, installed=["DejaVu Sans", "Noto Sans CJK SC"])
    top, bottom = figure.axes
    assert labels(top) == ["本月累计支出", "预计月底 US$1,500.00", "预算 US$5,000.00"]
    assert bottom.get_xlabel() == "日期（本月第几天）" and figure.get_suptitle() == "2026-11支出"
    assert top.get_legend().get_texts()[0].get_fontfamily() == ["Noto Sans CJK SC", "DejaVu Sans"]


def test_without_a_cjk_font_a_chinese_chart_falls_back_to_english_and_misses_no_glyph():
    figure, warned = _drawn_quietly(_zh(month("0.50", 10, "5000", "15")), installed=["DejaVu Sans"])
    top, bottom = figure.axes
    assert labels(top) == ["spent, month to date", "forecast $15.00"]
    assert [text.get_text() for text in top.texts] == ["budget $5,000.00: far above this scale"]
    assert bottom.get_xlabel() == "day of the month" and figure.get_suptitle() == "Spend 2026-11"
    assert not [w for w in warned if "missing from" in w]


def test_on_this_machine_the_chinese_chart_misses_no_glyph():
    """With the fonts installed here, whichever they are: Chinese when a CJK font is among them, English if not;
    never a box for a missing glyph."""
    figure, warned = _drawn_quietly(_zh(month("45", 12, "5000", "1500")))
    chinese = cjk_font(installed_fonts()) is not None
    assert (figure.get_suptitle() == "2026-11支出") is chinese
    assert not [w for w in warned if "missing from" in w], warned
