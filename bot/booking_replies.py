"""Replies for /gpu book, quote and prices."""

from __future__ import annotations

from datetime import timedelta

from gpubot.bot.booking_quote import left_out_lines
from gpubot.bot.context import BotContext
from gpubot.bot.i18n import Translator, duration_for, money_for
from gpubot.bot.progress_lines import step_text
from gpubot.bot.refusals import failure_text, refusal_text
from gpubot.bot.views import Message, gpu_name, section_message
from gpubot.domain import grammar
from gpubot.domain.catalog import GPUS
from gpubot.domain.model import Offer, OfferRequest
from gpubot.scheduling.booking.booking import BookingAsk
from gpubot.scheduling.booking.quotes import PricedOffer, Quote, quote
from gpubot.scheduling.booking.requested import left_out
from gpubot.scheduling.booking.shapes import nothing_sells
from gpubot.scheduling.booking.waits import wait_step
from gpubot.scheduling.desk.request import request
from gpubot.scheduling.money import reports

__all__ = ["on_book", "on_prices", "on_quote"]


def on_book(ctx: BotContext, cmd: grammar.Book, command: dict, client) -> Message | None:
    """Book: one engine call records the booking (its message is posted from the outbox, in its owner's
    language), then acquires it or asks the admins; the message follows every step."""
    ask = BookingAsk(owner=command["user_id"], gpu=cmd.shape.gpu, count=cmd.shape.count, duration=cmd.duration,
                     spot=cmd.spot, provider=cmd.provider, region=cmd.region, max_price=cmd.max_price,
                     project=cmd.project, start_at=cmd.start_at, note=cmd.note, channel=command.get("channel_id"),
                     alternatives=cmd.alternatives, cuda=cmd.cuda, image=cmd.image)
    request(ctx.engine, ask, request_key=f"cmd:{command.get('trigger_id') or ''}:{command['user_id']}")
    return None


def cuda_lines(quotes: list[Quote], tr: Translator) -> list[str]:
    """`Left out for CUDA 12.1: b b-1 (max CUDA 11.8 < 12.1)`, for the offers each quote left out."""
    return left_out_lines(left_out(quotes), tr)


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
                                                           duration=duration_for(tr, duration)) + "*"
    if not result.offers:
        refusal = tr.gettext("No configured provider offers this shape with that CUDA.") if cuda else \
            refusal_text(nothing_sells(ctx.engine, result), tr)
        return "\n".join([head, refusal, *cuda_lines([result], tr)])
    cur = ctx.engine.currency
    rows = [tr.gettext("{icon} {provider} {region}: {price}/GPU-h, ≈ {total}").format(
                icon=_icon(o.offer), provider=o.offer.provider, region=o.offer.region,
                price=money_for(tr, o.price_per_gpu_hour, cur), total=money_for(tr, o.total, cur))
            + _availability(o.offer, tr) for o in result.offers[:15]]
    failures = [f"⚠️ {failure_text(name, why, tr)}" for name, why in sorted(result.failures.items())]
    return "\n".join([head, *rows, *cuda_lines([result], tr), *failures, _budget_effect(ctx, user, result.best, tr),
                      step_text(wait_step(ctx.engine, shape.gpu), tr)])


def _icon(offer: Offer) -> str:
    """🟢 free now, ⏳ would wait in the provider's own queue (a busy Slurm partition), ⚪ no capacity now."""
    return "⚪" if not offer.available else "⏳" if offer.queued else "🟢"


def _availability(offer: Offer, tr: Translator) -> str:
    if not offer.available:
        return " " + tr.gettext("(no capacity now)")
    return " " + tr.gettext("(busy now: the job would wait in its queue)") if offer.queued else ""


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
