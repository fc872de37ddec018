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
from domain.errors import Refused
from domain.model import Booking, BookingState, OfferRequest
from domain.money import format_money
from scheduling.approvals import ask_admins
from scheduling.booking import Booked, BookingAsk, attach_message, book
from scheduling.queue import start_now
from scheduling.quotes import quote

__all__ = ["on_book", "on_prices", "on_quote"]

log = logging.getLogger(__name__)

_STATE_LINE = {
    BookingState.AWAITING_APPROVAL: "Over budget: waiting for an admin to approve.",
    BookingState.SCHEDULED: "Scheduled; acquisition starts at the requested time.",
    BookingState.REQUESTED: "Looking for capacity…",
}


def on_book(ctx: BotContext, cmd: grammar.Book, command: dict, client) -> Message | None:
    """Book: quote, record, post the booking message, then acquire (updating that message)."""
    if cmd.alternatives:
        raise Refused("Alternatives with `or` are not bookable yet; book one shape, e.g. `/gpu book a100x4 6h`.")
    ask = BookingAsk(owner=command["user_id"], gpu=cmd.shape.gpu, count=cmd.shape.count, duration=cmd.duration,
                     spot=cmd.spot, provider=cmd.provider, region=cmd.region, max_price=cmd.max_price,
                     project=cmd.project, start_at=cmd.start_at, note=cmd.note, channel=command.get("channel_id"))
    booked = book(ctx.engine, ask, request_key=f"cmd:{command.get('trigger_id') or ''}:{command['user_id']}")
    if booked.duplicate:
        return None
    booking = _post(ctx, client, booked)
    if booking.state == BookingState.REQUESTED:
        start_now(ctx.engine, booking)
    return None


def _post(ctx: BotContext, client, booked: Booked) -> Booking:
    booking, best = booked.booking, booked.quote.best
    lines = quote_lines(best.price_per_gpu_hour, best.total, format_duration(booking.duration), best.offer.provider,
                        best.offer.region, booked.budget, booked.estimate, ctx.engine.currency)
    if booking.start_at and booking.state == BookingState.SCHEDULED:
        lines.append(f"Starts {booking.start_at:%Y-%m-%d %H:%M} UTC.")
    ctx.notifier.remember(booking, lines)
    message = booking_message(booking, [*lines, _STATE_LINE.get(booking.state, "")], ctx.engine.currency)
    where = _post_message(client, booking, message)
    if booking.state == BookingState.AWAITING_APPROVAL:
        ask_admins(ctx.engine, booking, f"<@{booking.owner}> asks for {booking.label} over budget: {lines[0]}",
                   message["blocks"])
    return attach_message(ctx.engine, booking.id, *where) if where else booking


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
    parts = [_quote_block(ctx, shape, cmd.duration) for shape in shapes]
    return section_message("\n\n".join(parts))


def _quote_block(ctx: BotContext, shape: grammar.Shape, duration: timedelta) -> str:
    result = quote(ctx.engine, OfferRequest(shape.gpu, shape.count), duration)
    head = f"*{gpu_name(shape.gpu, shape.count)} for {format_duration(duration)}*"
    if not result.offers:
        return head + "\nNo configured provider offers this shape."
    rows = [f"{'🟢' if o.offer.available else '⚪'} {o.offer.provider} {o.offer.region}: "
            f"{format_money(o.price_per_gpu_hour, ctx.engine.currency)}/GPU-h, "
            f"≈ {format_money(o.total, ctx.engine.currency)}" + ("" if o.offer.available else " (no capacity now)")
            for o in result.offers[:15]]
    failures = [f"⚠️ {name}: {why}" for name, why in sorted(result.failures.items())]
    return "\n".join([head, *rows, *failures])


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
