"""The quote a new booking's message shows above its progress, worded from its BookingRequested notice."""

from __future__ import annotations

from collections.abc import Iterable

from gpubot.bot.i18n import N_, Translator, money_for
from gpubot.bot.views import escape, gpu_name, quote_lines
from gpubot.domain.budget import BudgetLine
from gpubot.domain.durations import format_duration
from gpubot.domain.notices import BookingRequested, CudaExclusion, ShapeChoice

__all__ = ["STATE_LINES", "left_out_lines", "requested_lines"]

STATE_LINES = {
    "awaiting_approval": N_("Over budget: waiting for an admin to approve."),
    "scheduled": N_("Scheduled; acquisition starts at the requested time."),
    "requested": N_("Looking for capacity…"),
}


def requested_lines(notice: BookingRequested, tr: Translator) -> list[str]:
    """The quote lines: price and budget effect, project and note, the shapes asked for, offers left out for
    CUDA, the start time of a scheduled booking and the over-budget warning of a booking booked anyway."""
    budget = [_budget_line(row) for row in notice.budget]
    lines = quote_lines(notice.hourly, notice.total, format_duration(notice.duration), escape(notice.provider),
                        escape(notice.region), budget, notice.estimate, notice.currency, tr)
    if notice.project:
        lines.append(tr.gettext("Project: {project}").format(project=escape(notice.project)))
    if notice.note:
        lines.append(tr.gettext("Note: {note}").format(note=escape(notice.note)))
    if notice.choices:
        parts = " · ".join(_choice(choice, notice.currency, tr) for choice in notice.choices)
        lines.append(tr.gettext("Alternatives (the cheapest free one is taken): {choices}").format(choices=parts))
    lines += left_out_lines(notice.left_out, tr)
    if notice.start_at and notice.state == "scheduled":
        lines.append(tr.gettext("Starts {time} UTC.").format(time=f"{notice.start_at:%Y-%m-%d %H:%M}"))
    if notice.decision == "warn":
        lines.append(_over_budget_warning(notice, budget, tr))
    return lines


def _budget_line(row: tuple) -> BudgetLine:
    scope, limit, projected = row
    return BudgetLine(scope=escape(scope), limit=limit, spent=projected)  # a scope may name a project


def _choice(choice: tuple, currency: str, tr: Translator) -> str:
    """`🟢 2× H100 80GB ≈ $47.88 on sim sim-1`, `⚪ … (no capacity now)` or `✖️ 8× V100 (not sold)`."""
    choice = ShapeChoice(*choice)
    name = gpu_name(choice.gpu, choice.count)
    if choice.total is None:
        return tr.gettext("✖️ {gpus} (not sold)").format(gpus=escape(name))
    values = {"gpus": escape(name), "total": money_for(tr, choice.total, currency),
              "provider": escape(choice.provider), "region": escape(choice.region)}
    if choice.available:
        return tr.gettext("🟢 {gpus} ≈ {total} on {provider} {region}").format(**values)
    return tr.gettext("⚪ {gpus} ≈ {total} on {provider} {region} (no capacity now)").format(**values)


def left_out_lines(left_out: Iterable[tuple], tr: Translator) -> list[str]:
    """`Left out for CUDA 12.1: b b-1 (max CUDA 11.8 < 12.1)`, one line per CUDA version asked for."""
    by_version: dict[str, list[str]] = {}
    for row in left_out:
        exclusion = CudaExclusion(*row)
        by_version.setdefault(exclusion.cuda, []).append(
            escape(f"{exclusion.provider} {exclusion.region} ({exclusion.why})"))
    return [tr.gettext("Left out for CUDA {version}: {offers}").format(version=escape(version),
                                                                       offers="; ".join(offers))
            for version, offers in by_version.items()]


def _over_budget_warning(notice: BookingRequested, budget: list[BudgetLine], tr: Translator) -> str:
    """`⚠️ Over budget: team would reach $5,120.00 of $5,000.00 (102 %). Booked anyway.`"""
    over = [line for line in budget if line.limit > 0 and line.projected + notice.estimate > line.limit]
    parts = [tr.gettext("{scope} would reach {amount} of {limit} ({percent} %)").format(
        scope=line.scope, amount=money_for(tr, line.projected + notice.estimate, notice.currency),
        limit=money_for(tr, line.limit, notice.currency), percent=line.percent_with(notice.estimate))
        for line in over]
    return tr.gettext("⚠️ Over budget: {budgets}. Booked anyway.").format(budgets="; ".join(parts))
