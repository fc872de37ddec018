"""The notice a new booking's message is posted from: its quote as data, for the bot to word."""

from __future__ import annotations

from decimal import Decimal

from gpubot.domain.budget import BudgetLine
from gpubot.domain.model import Booking
from gpubot.domain.notices import BookingRequested, CudaExclusion, QuoteBudgetRow, ShapeChoice
from gpubot.scheduling.booking.quotes import PricedOffer, Quote

__all__ = ["left_out", "requested_notice"]


def requested_notice(booking: Booking, quotes: list[Quote], best: PricedOffer, budget: list[BudgetLine],
                     estimate: Decimal, decision: str, currency: str) -> BookingRequested:
    """What the booking's message shows when it is posted: the offer acquisition would take now, what the booking
    does to each budget, every shape asked for (when there were alternatives) and offers left out for CUDA."""
    return BookingRequested(
        to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count, state=booking.state.value,
        duration=booking.duration, hourly=best.price_per_gpu_hour, total=best.total, currency=currency,
        provider=best.offer.provider, region=best.offer.region, project=booking.project, note=booking.note,
        estimate=estimate, decision=decision, start_at=booking.start_at,
        budget=tuple(QuoteBudgetRow(line.scope, line.limit, line.projected) for line in budget),
        choices=tuple(_choice(q) for q in quotes) if len(quotes) > 1 else (),
        left_out=left_out(quotes))


def left_out(quotes: list[Quote]) -> tuple[CudaExclusion, ...]:
    """The offers each quote left out for its CUDA floor (ten per quote at the most), and why."""
    return tuple(CudaExclusion(q.request.cuda or "", o.provider, o.region, why)
                 for q in quotes for o, why in q.excluded[:10])


def _choice(quote: Quote) -> ShapeChoice:
    best = quote.best
    if best is None:
        return ShapeChoice(quote.request.gpu, quote.request.count)
    return ShapeChoice(quote.request.gpu, quote.request.count, best.total, best.offer.provider, best.offer.region,
                       best.offer.available)
