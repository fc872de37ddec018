"""The digest's chart: this month's daily spend and its running total against the budget, as PNG bytes."""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from datetime import date
from decimal import Decimal

__all__ = ["spend_chart"]

log = logging.getLogger(__name__)


def spend_chart(daily: Sequence[tuple[date, Decimal]], limit: Decimal, title: str, currency: str) -> bytes | None:
    """A PNG of daily spend (bars), cumulative spend (line) and the monthly budget (dashed); None without
    matplotlib (the `charts` extra)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        log.warning("matplotlib is not installed (pip install 'gpubot[charts]'): the digest has no chart")
        return None
    figure = Figure(figsize=(8, 4), dpi=100)  # a Figure of its own, never pyplot's global state (threads)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    days = [d.day for d, _ in daily]
    amounts = [float(a) for _, a in daily]  # floats only for drawing; every figure shown is Decimal
    running = [sum(amounts[: i + 1]) for i in range(len(amounts))]
    axes.bar(days, amounts, color="#4c78a8", label=f"daily spend ({currency})")
    axes.plot(days, running, color="#f58518", marker="o", label="month to date")
    axes.axhline(float(limit), color="#e45756", linestyle="--", label=f"budget {limit:,.2f}")
    axes.set_xlabel("day of month")
    axes.set_ylabel(currency)
    axes.set_title(title)
    axes.legend(loc="upper left")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
