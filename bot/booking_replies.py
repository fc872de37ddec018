"""Replies for /gpu book, quote and prices."""

from __future__ import annotations

import logging
from datetime import timedelta

from slack_sdk.errors import SlackApiError

from bot.context import BotContext
from bot.views import Message, booking_message, gpu_name, quote_lines, section_message
from domain import grammar
from domain.catalog import GPUS
from domain.durations import format_duration
from domain.model import Booking, BookingState, OfferRequest
from domain.money import format_money
from scheduling import reports
from scheduling.approvals import ask_admins
from scheduling.booking import Booked, BookingAsk, attach_message, book
from scheduling.queue import start_now
from scheduling.quotes import PricedOffer, Quote, quote
from scheduling.shapes import nothing_sells_text
from scheduling.waits import wait_line

__all__ = ["on_book", "on_prices", "on_quote", "post_and_start"]

log = logging.getLogger(__name__)

_STATE_LINE = {
    BookingState.AWAITING_APPROVAL: "Over budget: waiting for an admin to approve.",
    BookingState.SCHEDULED: "Scheduled; acquisition starts at the requested time.",
    BookingState.REQUESTED: "Looking for capacity…",
}


def on_book(ctx: BotContext, cmd: grammar.Book, command: dict, client) -> Message | None:
    """Book: quote, record, post the booking message, then acquire (updating that message)."""
    ask = BookingAsk(owner=command["user_id"], gpu=cmd.shape.gpu, count=cmd.shape.count, duration=cmd.duration,
                     spot=cmd.spot, provider=cmd.provider, region=cmd.region, max_price=cmd.max_price,
                     project=cmd.project, start_at=cmd.start_at, note=cmd.note, channel=command.get("channel_id"),
                     alternatives=tuple((s.gpu, s.count) for s in cmd.alternatives), cuda=cmd.cuda, image=cmd.image)
    booked = book(ctx.engine, ask, request_key=f"cmd:{command.get('trigger_id') or ''}:{command['user_id']}")
    post_and_start(ctx, client, booked)
    return None


def post_and_start(ctx: BotContext, client, booked: Booked) -> Booking:
    """Post a new booking's message (unless a retry already did), then acquire it when it may start now."""
    if booked.duplicate:
        return booked.booking
    booking = _post(ctx, client, booked)
    if booking.state == BookingState.REQUESTED:
        return start_now(ctx.engine, booking)
    return booking


def _post(ctx: BotContext, client, booked: Booked) -> Booking:
    booking, best = booked.booking, booked.best
    lines = quote_lines(best.price_per_gpu_hour, best.total, format_duration(booking.duration), best.offer.provider,
                        best.offer.region, booked.budget, booked.estimate, ctx.engine.currency)
    lines += [*_alternative_lines(booked, ctx.engine.currency), *cuda_lines([booked.quote, *booked.alternatives])]
    if booking.start_at and booking.state == BookingState.SCHEDULED:
        lines.append(f"Starts {booking.start_at:%Y-%m-%d %H:%M} UTC.")
    if booked.decision == "warn":
        lines.append(_over_budget_warning(booked, ctx.engine.currency))
    ctx.notifier.remember(booking, lines)
    message = booking_message(booking, [*lines, _STATE_LINE.get(booking.state, "")], ctx.engine.currency)
    where = _post_message(client, booking, message)
    if booking.state == BookingState.AWAITING_APPROVAL:
        ask_admins(ctx.engine, booking, f"<@{booking.owner}> asks for {booking.label} over budget: {lines[0]}",
                   message["blocks"])
    return attach_message(ctx.engine, booking.id, *where) if where else booking


def _alternative_lines(booked: Booked, currency: str) -> list[str]:
    """`Alternatives: 🟢 2× H100 80GB ≈ $47.88 on sim sim-1 · ⚪ 8× RTX 4090 24GB ≈ $35.52 (no capacity now)`."""
    if not booked.alternatives:
        return []
    parts = [_alternative(q, currency) for q in (booked.quote, *booked.alternatives)]
    return ["Alternatives (the cheapest free one is taken): " + " · ".join(parts)]


def _alternative(result: Quote, currency: str) -> str:
    name = gpu_name(result.request.gpu, result.request.count)
    best = result.best
    if best is None:
        return f"✖️ {name} (not sold)"
    free = best.offer.available
    return (f"{'🟢' if free else '⚪'} {name} ≈ {format_money(best.total, currency)} on {best.offer.provider} "
            f"{best.offer.region}" + ("" if free else " (no capacity now)"))


def cuda_lines(quotes: list[Quote]) -> list[str]:
    """`Left out for CUDA 12.1: b b-1 (max CUDA 11.8 < 12.1)`, one line per quote that left offers out."""
    return [f"Left out for CUDA {q.request.cuda}: " + "; ".join(f"{o.provider} {o.region} ({why})"
                                                             for o, why in q.excluded[:10])
            for q in quotes if q.excluded]


def _over_budget_warning(booked: Booked, currency: str) -> str:
    """`⚠️ Over budget: team would reach $5,120.00 of $5,000.00 (102 %). Booked anyway.`"""
    over = [line for line in booked.budget if line.limit > 0 and line.projected + booked.estimate > line.limit]
    parts = [f"{line.scope} would reach {format_money(line.projected + booked.estimate, currency)} of "
             f"{format_money(line.limit, currency)} ({line.percent_with(booked.estimate)} %)" for line in over]
    return f"⚠️ Over budget: {'; '.join(parts)}. Booked anyway."


def _post_message(client, booking: Booking, message: Message) -> tuple[str, str] | None:
    for channel in (booking.channel, booking.owner):
        if not channel:
            continue
        try:
            response = client.chat_postMessage(channel=channel, **message)
            return response["channel"], response["ts"]
        except SlackApiError as exc:
            log.info("posting #%s to %s failed: %s", booking.id, channel, exc.response.get("error"))
    return None


def on_quote(ctx: BotContext, cmd: grammar.Quote, command: dict, client) -> Message:
    """Every provider's offer for a shape, cheapest first, availability marked; nothing is booked."""
    shapes = [cmd.shape, *cmd.alternatives]
    parts = [_quote_block(ctx, shape, cmd.duration, command["user_id"], cmd.cuda) for shape in shapes]
    return section_message("\n\n".join(parts))


def _quote_block(ctx: BotContext, shape: grammar.Shape, duration: timedelta, user: str, cuda: str | None) -> str:
    result = quote(ctx.engine, OfferRequest(shape.gpu, shape.count, cuda=cuda), duration)
    head = f"*{gpu_name(shape.gpu, shape.count)} for {format_duration(duration)}*"
    if not result.offers:
        refusal = "No configured provider offers this shape with that CUDA." if cuda else \
            nothing_sells_text(ctx.engine, result)
        return "\n".join([head, refusal, *cuda_lines([result])])
    rows = [f"{'🟢' if o.offer.available else '⚪'} {o.offer.provider} {o.offer.region}: "
            f"{format_money(o.price_per_gpu_hour, ctx.engine.currency)}/GPU-h, "
            f"≈ {format_money(o.total, ctx.engine.currency)}" + ("" if o.offer.available else " (no capacity now)")
            for o in result.offers[:15]]
    failures = [f"⚠️ {name}: {why}" for name, why in sorted(result.failures.items())]
    return "\n".join([head, *rows, *cuda_lines([result]), *failures, _budget_effect(ctx, user, result.best),
                      wait_line(ctx.engine, shape.gpu)])


def _budget_effect(ctx: BotContext, user: str, best: PricedOffer | None) -> str:
    """`Budget if booked (≈ $58.08): team at 74 % of $5,000.00 (was 73 %)`, for the offer a booking would take."""
    if best is None:
        return ""
    lines = reports.budget_lines_for(ctx.engine, user)
    cur = ctx.engine.currency
    effects = [f"{line.scope} at {line.percent_with(best.total)} % of {format_money(line.limit, cur)} "
               f"(was {line.percent_with()} %)" for line in lines]
    over = any(line.limit > 0 and line.projected + best.total > line.limit for line in lines)
    return (f"Budget if booked (≈ {format_money(best.total, cur)}): " + "; ".join(effects)
            + (f" — ⚠️ over budget (over_budget = {ctx.engine.policy.budget.over_budget})" if over else ""))


def on_prices(ctx: BotContext, cmd: grammar.Prices, command: dict, client) -> Message:
    """The catalog: the cheapest price per GPU-hour of each GPU type any provider sells."""
    rows = []
    for key, model in GPUS.items():
        result = quote(ctx.engine, OfferRequest(key, 1), timedelta(hours=1))
        if result.offers:
            cheapest = min(result.offers, key=lambda o: o.price_per_gpu_hour)
            rows.append(f"{model.display}: from {format_money(cheapest.price_per_gpu_hour, ctx.engine.currency)}"
                        f"/GPU-h ({cheapest.offer.provider})")
    return section_message("*GPU prices*\n" + ("\n".join(rows) or "No provider is configured."))
