"""Replay reports: percentiles, pool fees over a span, and the table and JSON of the policies."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

from gpubot.domain.replay_report import (
    PolicyFigures,
    assumption_lines,
    bound_lines,
    fee_for_span,
    percentile,
    report_dict,
    report_table,
)
from gpubot.domain.replay_trace import TraceAssumptions


def _figures(name: str, spend: str, bound: str = "0") -> PolicyFigures:
    return PolicyFigures(name, Decimal(spend), Decimal("16"), Decimal("10"), Decimal("10"), Decimal("20"),
                         Decimal("0"), 0, 0.0, 5400.0, 1, 2, 2, 0, 0, 3, {"a": Decimal(spend)},
                         lower_bound=Decimal(bound))


def test_percentiles_are_nearest_rank():
    values = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 100)) == (50, 100, 100)
    assert percentile([7], 50) == 7 and percentile([], 95) == 0


def test_a_monthly_fee_is_charged_by_the_share_of_each_month_covered():
    months = [(datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)),
              (datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC))]
    span = (datetime(2026, 1, 17, tzinfo=UTC), datetime(2026, 2, 15, tzinfo=UTC))
    assert fee_for_span(Decimal(3100), months, *span) == Decimal(1500) + Decimal(1400) * 3100 / 2800


def test_the_table_has_one_row_per_policy_and_the_json_keeps_decimals_exact():
    figures = [_figures("baseline", "32", "20"), _figures("idle-reclaim", "23.2")]
    table = report_table(figures, "USD").splitlines()
    assert table[0].split()[:3] == ["policy", "spend", "USD"]
    assert table[2].split()[:2] == ["baseline", "32.00"] and table[3].split()[:2] == ["idle-reclaim", "23.20"]
    assert "1.5h" in table[2]  # wait p95 in hours
    assert "vs bound" in table[0] and "+60.0 %" in table[2] and table[3].split()[-3:] == ["-", "a", "23.20"]
    data = json.loads(json.dumps(report_dict(figures, {"seed": 1})))
    assert data["policies"][1]["spend"] == "23.2" and data["policies"][1]["spend_by_provider"] == {"a": "23.2"}
    assert data["meta"] == {"seed": 1}
    assert (data["policies"][0]["lower_bound"], data["policies"][0]["above_lower_bound_percent"]) == ("20", "60")
    assert data["policies"][1]["above_lower_bound_percent"] is None


def test_the_assumptions_and_bounds_are_said_one_line_each():
    figures = [replace(_figures("baseline", "32", "20"), rebooked=3, long_jobs=2, bound_method="exact",
                       bound_seconds=0.42),
               replace(_figures("spot", "30"), rebooked=5, long_jobs=2, bound_method="none")]
    lines = assumption_lines(TraceAssumptions(60, 33, 27, 0, 4, Decimal("1.26")), figures)
    assert lines == [
        "assumed: 33 of 60 jobs (55 %) have measured utilisation; 27 got idle stretches drawn from them; 0 counted "
        "busy for their whole run (no utilisation to draw from)",
        "assumed: 4 fractional-GPU requests rounded up to whole GPUs (+1.3 GPU-h of work)",
        "assumed: 2 jobs ran longer than booking.max_duration and were booked again when the slot ended "
        "(re-bookings: baseline 3, spot 5)"]
    assert bound_lines(figures) == ["bound: baseline: 20.00 (exact linear program, solved in 0.4s)",
                                    "bound: spot: none (no schedule of its work fits the capacity)"]
