"""`/gpu book` as one engine call: book, then acquire at once a booking that may start now."""

from __future__ import annotations

from dataclasses import replace

from gpubot.domain.model import BookingState
from gpubot.scheduling.acquisition.queue import start_now
from gpubot.scheduling.booking.booking import Booked, BookingAsk, book
from gpubot.scheduling.engine import Engine

__all__ = ["request"]


def request(engine: Engine, ask: BookingAsk, request_key: str | None = None) -> Booked:
    """The whole of `/gpu book`: book (its message, and an admin's approval when it is over budget, are owed
    with it), then acquire it at once when it may start now. A repeated request changes nothing."""
    booked = book(engine, ask, request_key)
    if booked.duplicate or booked.booking.state != BookingState.REQUESTED:
        return booked
    return replace(booked, booking=start_now(engine, booked.booking, booked.booking.estimate))
