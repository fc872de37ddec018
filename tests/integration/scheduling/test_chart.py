"""The digest's chart is readable at a glance: the budget line and the forecast are there, legends sit outside the
data, and each axis fits the month's spend, tiny or large (rendered with matplotlib, inspected as drawn)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from gpubot.scheduling.money.chart import ChartData, spend_chart, spend_figure

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
