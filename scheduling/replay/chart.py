"""The replay's chart: spend and idle waste per policy, side by side, as PNG bytes."""

from __future__ import annotations

import io
from collections.abc import Sequence

from gpubot.domain.replay_report import PolicyFigures

__all__ = ["replay_chart"]


def replay_chart(figures: Sequence[PolicyFigures], currency: str, title: str) -> bytes:
    """Bars of spend and of the idle GPU-hours' cost per policy (matplotlib Agg, no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(9, 4.5), dpi=100)  # a Figure of its own, never pyplot's global state
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    names = [f.policy for f in figures]
    spend = [float(f.spend) for f in figures]  # floats only for drawing; the figures stay Decimal
    waste = [float(f.idle_cost) for f in figures]
    positions = range(len(names))
    axes.bar([p - 0.2 for p in positions], spend, width=0.4, color="#4c78a8", label=f"spend ({currency})")
    axes.bar([p + 0.2 for p in positions], waste, width=0.4, color="#e45756", label=f"idle waste ({currency})")
    for p, value in zip(positions, spend, strict=True):
        axes.annotate(f"{value:,.0f}", (p - 0.2, value), ha="center", va="bottom", fontsize=8)
    axes.set_xticks(list(positions), names)
    axes.set_ylabel(currency)
    axes.set_title(title)
    axes.legend(loc="upper right")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
