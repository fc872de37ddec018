"""Replies for /gpu book, quote and prices."""

from __future__ import annotations

import logging
from datetime import timedelta

from gpubot.bot.context import BotContext
from gpubot.bot.i18n import ENGLISH, N_, Translator, money_for
from gpubot.bot.progress import step_text
from gpubot.bot.refusals import refusal_text
from gpubot.bot.views import Message, booking_message, gpu_name, quote_lines, section_message
from gpubot.domain import grammar
from gpubot.domain.catalog import GPUS
from gpubot.domain.durations import format_duration
from gpubot.domain.model import Booking, BookingState, OfferRequest
from gpubot.scheduling.acquisition.queue import start_now
from gpubot.scheduling.booking.booking import Booked, BookingAsk, attach_message, book
from gpubot.scheduling.booking.quotes import PricedOffer, Quote, quote
from gpubot.scheduling.booking.shapes import nothing_sells
from gpubot.scheduling.booking.waits import wait_step
from gpubot.scheduling.money import reports
from slack_sdk.errors import SlackApiError

__all__ = ["on_book", "on_prices", "on_quote", "post_and_start"]

log = logging.getLogger(__name__)

_STATE_LINE = {
    BookingState.AWAITING_APPROVAL: N_("Over budget: waiting for an admin to approve."),
    BookingState.SCHEDULED: N_("Scheduled; acquisition starts at the requested time."),
    BookingState.REQUESTED: N_("Looking for capacity…"),
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


def _quote_lines(booked: Booked, currency: str, tr: Translator) -> list[str]:
    booking, best = booked.booking, booked.best
    return quote_lines(best.price_per_gpu_hour, best.total, format_duration(booking.duration), best.offer.provider,
                       best.offer.region, booked.budget, booked.estimate, currency, tr)


def _post(ctx: BotContext, client, booked: Booked) -> Booking:
    """The booking message, in its owner's language (the admins were asked with the booking, if it waits for them)."""
    booking, currency, tr = booked.booking, ctx.engine.currency, ctx.tr_for(booked.booking.owner)
    lines = _quote_lines(booked, currency, tr)
    lines += [*_alternative_lines(booked, currency, tr), *cuda_lines([booked.quote, *booked.alternatives], tr)]
    if booking.start_at and booking.state == BookingState.SCHEDULED:
        lines.append(tr.gettext("Starts {time} UTC.").format(time=f"{booking.start_at:%Y-%m-%d %H:%M}"))
    if booked.decision == "warn":
        lines.append(_over_budget_warning(booked, currency, tr))
    state_line = tr.gettext(_STATE_LINE[booking.state]) if booking.state in _STATE_LINE else ""
    message = booking_message(booking, [*lines, state_line], currency, tr)
    where = _post_message(client, booking, message)
    return attach_message(ctx.engine, booking.id, *where, lines) if where else booking


def _alternative_lines(booked: Booked, currency: str, tr: Translator) -> list[str]:
    """`Alternatives: 🟢 2× H100 80GB ≈ $47.88 on sim sim-1 · ⚪ 8× RTX 4090 24GB ≈ $35.52 (no capacity now)`."""
    if not booked.alternatives:
        return []
    parts = [_alternative(q, currency, tr) for q in (booked.quote, *booked.alternatives)]
    return [tr.gettext("Alternatives (the cheapest free one is taken): {choices}").format(choices=" · ".join(parts))]


def _alternative(result: Quote, currency: str, tr: Translator) -> str:
    name = gpu_name(result.request.gpu, result.request.count)
    best = result.best
    if best is None:
        return tr.gettext("✖️ {gpus} (not sold)").format(gpus=name)
    values = {"gpus": name, "total": money_for(tr, best.total, currency), "provider": best.offer.provider,
              "region": best.offer.region}
    if best.offer.available:
        return tr.gettext("🟢 {gpus} ≈ {total} on {provider} {region}").format(**values)
    return tr.gettext("⚪ {gpus} ≈ {total} on {provider} {region} (no capacity now)").format(**values)


def cuda_lines(quotes: list[Quote], tr: Translator = ENGLISH) -> list[str]:
    """`Left out for CUDA 12.1: b b-1 (max CUDA 11.8 < 12.1)`, one line per quote that left offers out."""
    return [tr.gettext("Left out for CUDA {version}: {offers}").format(
                version=q.request.cuda, offers="; ".join(f"{o.provider} {o.region} ({why})"
                                                         for o, why in q.excluded[:10]))
            for q in quotes if q.excluded]


def _over_budget_warning(booked: Booked, currency: str, tr: Translator) -> str:
    """`⚠️ Over budget: team would reach $5,120.00 of $5,000.00 (102 %). Booked anyway.`"""
    over = [line for line in booked.budget if line.limit > 0 and line.projected + booked.estimate > line.limit]
    parts = [tr.gettext("{scope} would reach {amount} of {limit} ({percent} %)").format(
        scope=line.scope, amount=money_for(tr, line.projected + booked.estimate, currency),
        limit=money_for(tr, line.limit, currency), percent=line.percent_with(booked.estimate)) for line in over]
    return tr.gettext("⚠️ Over budget: {budgets}. Booked anyway.").format(budgets="; ".join(parts))


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
    tr = ctx.tr_for(command["user_id"])
    shapes = [cmd.shape, *cmd.alternatives]
    parts = [_quote_block(ctx, shape, cmd.duration, command["user_id"], cmd.cuda, tr) for shape in shapes]
    return section_message("\n\n".join(parts), tr)


def _quote_block(ctx: BotContext, shape: grammar.Shape, duration: timedelta, user: str, cuda: str | None,
                 tr: Translator) -> str:
    result = quote(ctx.engine, OfferRequest(shape.gpu, shape.count, cuda=cuda), duration)
    head = "*" + tr.gettext("{gpus} for {duration}").format(gpus=gpu_name(shape.gpu, shape.count),
                                                           duration=format_duration(duration)) + "*"
    if not result.offers:
        refusal = tr.gettext("No configured provider offers this shape with that CUDA.") if cuda else \
            refusal_text(nothing_sells(ctx.engine, result), tr)
        return "\n".join([head, refusal, *cuda_lines([result], tr)])
    cur = ctx.engine.currency
    rows = [tr.gettext("{icon} {provider} {region}: {price}/GPU-h, ≈ {total}").format(
                icon="🟢" if o.offer.available else "⚪", provider=o.offer.provider, region=o.offer.region,
                price=money_for(tr, o.price_per_gpu_hour, cur), total=money_for(tr, o.total, cur))
            + ("" if o.offer.available else " " + tr.gettext("(no capacity now)"))
            for o in result.offers[:15]]
    failures = [f"⚠️ {name}: {why}" for name, why in sorted(result.failures.items())]
    return "\n".join([head, *rows, *cuda_lines([result], tr), *failures, _budget_effect(ctx, user, result.best, tr),
                      step_text(wait_step(ctx.engine, shape.gpu), tr)])


def _budget_effect(ctx: BotContext, user: str, best: PricedOffer | None, tr: Translator) -> str:
    """`Budget if booked (≈ $58.08): team at 74 % of $5,000.00 (was 73 %)`, for the offer a booking would take."""
    if best is None:
        return ""
    lines = reports.budget_lines_for(ctx.engine, user)
    cur = ctx.engine.currency
    effects = [tr.gettext("{scope} at {percent} % of {limit} (was {was} %)").format(
        scope=line.scope, percent=line.percent_with(best.total), limit=money_for(tr, line.limit, cur),
        was=line.percent_with()) for line in lines]
    over = any(line.limit > 0 and line.projected + best.total > line.limit for line in lines)
    text = tr.gettext("Budget if booked (≈ {total}): {effects}").format(total=money_for(tr, best.total, cur),
                                                                       effects="; ".join(effects))
    if over:
        text += " — " + tr.gettext("⚠️ over budget (over_budget = {rule})").format(
            rule=ctx.engine.policy.budget.over_budget)
    return text


def on_prices(ctx: BotContext, cmd: grammar.Prices, command: dict, client) -> Message:
    """The catalog: the cheapest price per GPU-hour of each GPU type any provider sells."""
    tr = ctx.tr_for(command["user_id"])
    rows = []
    for key, model in GPUS.items():
        result = quote(ctx.engine, OfferRequest(key, 1), timedelta(hours=1))
        if result.offers:
            cheapest = min(result.offers, key=lambda o: o.price_per_gpu_hour)
            rows.append(tr.gettext("{gpu}: from {price}/GPU-h ({provider})").format(
                gpu=model.display, price=money_for(tr, cheapest.price_per_gpu_hour, ctx.engine.currency),
                provider=cheapest.offer.provider))
    body = "\n".join(rows) or tr.gettext("No provider is configured.")
    return section_message("*" + tr.gettext("GPU prices") + "*\n" + body, tr)
