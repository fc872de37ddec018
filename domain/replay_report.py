"""Replay reports: the figures of one policy's replay, percentiles, and the side-by-side table and JSON."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from decimal import Decimal

from gpubot.domain.money import CENT
from gpubot.domain.replay_trace import TraceAssumptions

__all__ = ["PolicyFigures", "assumption_lines", "bound_lines", "fee_for_span", "percentile", "report_dict",
           "report_table"]

_TENTH = Decimal("0.1")


@dataclass(frozen=True)
class PolicyFigures:
    """What replaying a trace under one policy cost and delivered (money in team currency)."""

    policy: str
    spend: Decimal
    gpu_hours: Decimal  # held (billed) GPU-hours
    work_gpu_hours: Decimal  # GPU-hours of the trace's work that ran
    idle_gpu_hours: Decimal
    idle_cost: Decimal
    reclaimed_gpu_hours: Decimal  # booked GPU-hours given back by idle reclaim
    reclaims: int
    wait_p50_s: float
    wait_p95_s: float
    failed: int  # bookings that ended failed (acquisition gave up, or refused)
    jobs: int
    bookings: int  # bookings made, continuations included
    requeued: int  # continuations booked after a reclaim or an expiry mid-job
    extensions: int
    reminders: int
    spend_by_provider: Mapping[str, Decimal] = field(default_factory=dict)
    replay_seconds: float = 0.0
    spot_bookings: int = 0  # bookings placed on spot machines
    fell_back: int = 0  # spot bookings that found no spot capacity in time and were booked on demand instead
    waited_cheaper: int = 0  # bookings that waited for a cheaper offer (acquire.wait_for_cheaper) at least once
    rebooked: int = 0  # slots that reached booking.max_duration mid-job: the rest of the job booked again
    long_jobs: int = 0  # jobs that ran longer than booking.max_duration
    interruptions: int = 0  # spot machines taken back under a running piece
    interrupted_jobs: int = 0
    redone_gpu_hours: Decimal = Decimal(0)  # work since the last checkpoint, lost at an interruption (done again
    #                                         when the job resumes)
    dropped_gpu_hours: Decimal = Decimal(0)  # work never done: nothing was booked again (on_preempt = "notify")
    resume_wait_p50_s: float = 0.0  # from an interruption to running again
    resume_wait_p95_s: float = 0.0
    # The lower bound (domain.replay_bound): the cheapest cost of this policy's work within every capacity limit
    # over time, plus the pools' fees (paid whether used or not). No policy of this world can spend less. 0: none.
    lower_bound: Decimal = Decimal(0)
    bound_method: str = ""  # "exact", "aggregated", or "none" (no schedule fitted)
    bound_seconds: float = 0.0  # time to build and solve it

    @property
    def above_bound_percent(self) -> Decimal | None:
        """How far the spend is above the lower bound, in percent of the bound (None without a bound)."""
        return (self.spend - self.lower_bound) * 100 / self.lower_bound if self.lower_bound > 0 else None


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank `p`-th percentile (0 < p ≤ 100); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)])


def fee_for_span(monthly_fee: Decimal, months: Sequence[tuple[datetime, datetime]], since: datetime,
                 until: datetime) -> Decimal:
    """A monthly fee for [since, until): each calendar month's fee times the share of the month covered."""
    total = Decimal(0)
    for start, end in months:
        covered = (min(end, until) - max(start, since)).total_seconds()
        if covered > 0:
            total += monthly_fee * Decimal(int(covered)) / Decimal(int((end - start).total_seconds()))
    return total


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f}h"


def _above(f: PolicyFigures) -> str:
    """`+41.3 %` above the lower bound, `-` without one."""
    above = f.above_bound_percent
    return "-" if above is None else f"{'+' if above >= 0 else ''}{above.quantize(_TENTH)} %"


def _row(f: PolicyFigures, currency: str) -> list[str]:
    providers = ", ".join(f"{name} {amount.quantize(CENT):,}" for name, amount in
                          sorted(f.spend_by_provider.items(), key=lambda kv: (-kv[1], kv[0])))
    return [f.policy, f"{f.spend.quantize(CENT):,}", f"{f.gpu_hours.quantize(_TENTH):,}",
            f"{f.idle_gpu_hours.quantize(_TENTH):,}", f"{f.idle_cost.quantize(CENT):,}",
            f"{f.reclaimed_gpu_hours.quantize(_TENTH):,}", _hours(f.wait_p50_s), _hours(f.wait_p95_s),
            str(f.failed), str(f.interruptions), f"{f.redone_gpu_hours.quantize(_TENTH):,}",
            _hours(f.resume_wait_p95_s), _above(f), providers or "-"]


def report_table(figures: Sequence[PolicyFigures], currency: str) -> str:
    """The policies side by side as a plain-text table (one row each)."""
    head = ["policy", f"spend {currency}", "GPU-h", "idle GPU-h", f"idle {currency}", "reclaimed GPU-h",
            "wait p50", "wait p95", "failed", "interrupted", "redone GPU-h", "resume wait p95", "vs bound",
            "spend by provider"]
    rows = [head, *(_row(f, currency) for f in figures)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i in (0, len(head) - 1) else c.rjust(w)
                       for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip() for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def _share(part: int, whole: int) -> str:
    return f"{part * 100 / whole:.0f} %" if whole else "-"


def assumption_lines(assumed: TraceAssumptions, figures: Sequence[PolicyFigures]) -> list[str]:
    """What the replay assumed, one line each: utilisation, fractional GPUs, and long jobs booked again."""
    lines = [f"assumed: {assumed.measured:,} of {assumed.jobs:,} jobs ({_share(assumed.measured, assumed.jobs)}) "
             f"have measured utilisation; {assumed.drawn:,} got idle stretches drawn from them; "
             f"{assumed.busy:,} counted busy for their whole run (no utilisation to draw from)",
             f"assumed: {assumed.rounded:,} fractional-GPU requests rounded up to whole GPUs "
             f"(+{assumed.rounded_gpu_hours.quantize(_TENTH):,} GPU-h of work)"]
    if figures:
        rebooked = ", ".join(f"{f.policy} {f.rebooked:,}" for f in figures)
        long_jobs = max(f.long_jobs for f in figures)
        lines.append(f"assumed: {long_jobs:,} job{'s' if long_jobs != 1 else ''} ran longer than "
                     f"booking.max_duration and {'were' if long_jobs != 1 else 'was'} booked again when the slot "
                     f"ended (re-bookings: {rebooked})")
    return lines


def bound_lines(figures: Sequence[PolicyFigures]) -> list[str]:
    """How each policy's lower bound was solved (program, size, time), one line each."""
    return [f"bound: {f.policy}: {f.lower_bound.quantize(CENT):,} ({f.bound_method} linear program, "
            f"solved in {f.bound_seconds:.1f}s)" if f.bound_method != "none" else
            f"bound: {f.policy}: none (no schedule of its work fits the capacity)" for f in figures]


def _plain(value: object) -> object:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def report_dict(figures: Sequence[PolicyFigures], meta: Mapping[str, object]) -> dict:
    """The report as JSON-ready data (Decimals as exact strings)."""
    return {"meta": dict(meta), "policies": [{**{k: _plain(v) for k, v in asdict(f).items()},
                                              "above_lower_bound_percent": _plain(f.above_bound_percent)}
                                             for f in figures]}
