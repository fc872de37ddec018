"""What a booking asks of a launch beyond its first shape: alternative shapes, the region to avoid, the CUDA
floor and the image, with the team defaults from the policy."""

from __future__ import annotations

from dataclasses import replace

from gpubot.domain.model import Booking, Offer, OfferRequest
from gpubot.domain.notices import ProgressStep, StepKind
from gpubot.providers.registry import kind_named
from gpubot.scheduling.engine import Engine

__all__ = ["advice_step", "avoided", "booking_requests", "launch_cuda", "launch_image"]

def booking_requests(engine: Engine, booking: Booking) -> list[OfferRequest]:
    """The first choice's request, then one per alternative shape; the team's default CUDA floor applies."""
    first = replace(booking.request(), cuda=launch_cuda(engine, booking))
    return [first, *(replace(first, gpu=shape.gpu, count=shape.count) for shape in booking.alternatives)]


def avoided(booking: Booking) -> frozenset[tuple[str, str]]:
    """The (provider, region) a booking must not land on (where the booking it replaces runs)."""
    provider, _, region = (booking.avoid or "").partition("/")
    return frozenset({(provider, region)}) if provider else frozenset()


def launch_cuda(engine: Engine, booking: Booking) -> str | None:
    """The booking's `--cuda`, else the team default."""
    return booking.cuda or engine.policy.booking.default_cuda


def launch_image(engine: Engine, booking: Booking, offer: Offer) -> str | None:
    """`--image`, else the provider's image for the region, else its image, else the team default (for kinds it
    applies to: containers)."""
    config = engine.policy.providers.get(offer.provider)
    if booking.image:
        return booking.image
    if config and (image := config.image_for(offer.region)):
        return image
    applies = getattr(kind_named(engine.kind_of(offer.provider)), "default_image", False)
    return engine.policy.booking.default_image if applies else None


def advice_step(booking: Booking, offer: Offer) -> ProgressStep | None:
    """The booking landed on another shape than its first choice (the bot words the advice), or None."""
    if (booking.gpu, booking.count) == (offer.gpu, offer.count):
        return None
    return ProgressStep(StepKind.ADVICE, gpu=offer.gpu, count=offer.count, wanted_gpu=booking.gpu,
                        wanted_count=booking.count)
