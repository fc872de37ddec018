"""A booking's Slack message, drawn from the booking as the ledger holds it at delivery (a BookingView): its
headline, the price it is billed at (or, before it is placed, the one it was quoted), the length and cost it has
now, its budget effect, the shapes and offers its quote weighed, and the line of the notice being delivered. Pure:
nothing here is stored, so a fallback, an extension or a language switch shows in the next update as it is."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from gpubot.bot.i18n import N_, Translator, duration_for, money_for
from gpubot.bot.times import moment_for
from gpubot.bot.views import Message, booking_message, escape, gpu_name, quote_lines, replaced_line
from gpubot.domain.booking_view import BookingView
from gpubot.domain.budget import BudgetLine
from gpubot.domain.model import BookingState
from gpubot.domain.notices import BookingRequested, CudaExclusion, ShapeChoice
from gpubot.domain.report_text import scope_name

__all__ = ["STATE_LINES", "booking_lines", "left_out_lines", "message_of"]

STATE_LINES = {
    "awaiting_approval": N_("Over budget: waiting for an admin to approve."),
    "scheduled": N_("Scheduled; acquisition starts at the requested time."),
    "requested": N_("Looking for capacity…"),
}


def message_of(view: BookingView, line: str | None, tr: Translator) -> Message:
    """The booking's whole message in `tr`'s language: headline, `booking_lines`, then `line` (the newest notice's
    line on it, if any) and the buttons its state allows now."""
    return booking_message(view.booking, [*booking_lines(view, tr), line or ""], view.currency, tr)


def booking_lines(view: BookingView, tr: Translator) -> list[str]:
    """The lines under the headline: the price and cost for the booking's length now with its budget effect (the
    billed price once placed, saying the first quote when that differed), project and note, the shapes asked for,
    offers left out for CUDA, the start of a booking still scheduled, a booked-anyway warning, and which booking
    replaces it and by when it is released (as `/gpu status` says it)."""
    booking, quoted = view.booking, view.quoted
    lines = _price_lines(view, tr)
    if booking.project:
        lines.append(tr.gettext("Project: {project}").format(project=escape(booking.project)))
    if booking.note:
        lines.append(tr.gettext("Note: {note}").format(note=escape(booking.note)))
    if quoted and quoted.choices:
        parts = " · ".join(_choice(choice, quoted.currency, tr) for choice in quoted.choices)
        lines.append(tr.gettext("Alternatives (the cheapest free one is taken): {choices}").format(choices=parts))
    if quoted:
        lines += left_out_lines(quoted.left_out, tr)
    if booking.start_at and booking.state == BookingState.SCHEDULED:
        lines.append(tr.gettext("Starts {time}.").format(time=moment_for(tr, booking.start_at)))
    if quoted and quoted.decision == "warn":
        lines.append(_over_budget_warning(quoted, [_budget_line(row) for row in quoted.budget], tr))
    if replaced := replaced_line(booking, view.replacement, view.replace_grace, tr):
        lines.append(replaced)
    return lines


def _price_lines(view: BookingView, tr: Translator) -> list[str]:
    """`≈ $52.56 for 6h at $2.19/GPU-h on sim sim-west — team at …`, for the length the booking has now, and when
    it is billed other than quoted, the quote it was booked on."""
    booking, quoted = view.booking, view.quoted
    budget = [_budget_line(row) for row in quoted.budget] if quoted else []
    length = duration_for(tr, booking.duration)
    if view.hourly is not None and view.total is not None:
        lines = quote_lines(view.hourly, view.total, length, escape(booking.provider), escape(booking.region),
                            budget, view.total, view.currency, tr)
        if quoted and view.repriced:
            lines.append(tr.gettext("Billed at this price: it was quoted {price}/GPU-h on {provider} {region} when "
                                    "booked.").format(price=money_for(tr, quoted.hourly, quoted.currency),
                                                      provider=escape(quoted.provider),
                                                      region=escape(quoted.region)))
        return lines
    if quoted is None or not quoted.provider or booking.state in (BookingState.CANCELLED, BookingState.FAILED):
        return []  # never placed, and it will not be: there is no price to show
    total = _for_length(quoted, booking.duration)
    return quote_lines(quoted.hourly, total, length, escape(quoted.provider), escape(quoted.region), budget, total,
                       quoted.currency, tr)


def _for_length(quoted: BookingRequested, length) -> Decimal:
    """The quoted total scaled to the booking's length now (its own when the length is the one quoted)."""
    if length == quoted.duration or not quoted.duration:
        return quoted.total
    return (quoted.total * Decimal(length.total_seconds()) / Decimal(quoted.duration.total_seconds())).quantize(
        Decimal("0.01"))


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
        scope=scope_name(line.scope, tr.gettext),
        amount=money_for(tr, line.projected + notice.estimate, notice.currency),
        limit=money_for(tr, line.limit, notice.currency), percent=line.percent_with(notice.estimate))
        for line in over]
    return tr.gettext("⚠️ Over budget: {budgets}. Booked anyway.").format(budgets=tr.gettext("; ").join(parts))
