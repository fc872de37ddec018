"""Peak awareness: the expected wait for a GPU at this hour, from the last weeks of acquisitions."""

from __future__ import annotations

from datetime import datetime, timedelta

from gpubot.db import bookings as booking_repo
from gpubot.db import waits as wait_repo
from gpubot.domain.catalog import GPUS
from gpubot.domain.model import ACTIVE_STATES, Booking, BookingState
from gpubot.domain.notices import ProgressStep, StepKind
from gpubot.domain.waits import WaitEstimate, estimate_wait, held_wait, night_hours
from gpubot.scheduling.engine import Engine

__all__ = ["ESTIMATE_TTL", "HISTORY_DAYS", "expected_wait", "queued_wait_steps", "wait_step"]

HISTORY_DAYS = 14
ESTIMATE_TTL = timedelta(minutes=5)


def expected_wait(engine: Engine, gpu: str) -> WaitEstimate:
    """Median time to acquire `gpu` for requests made at this hour of day (team time), and at night.

    Two weeks of launches move the median slowly, so an estimate is reused for `ESTIMATE_TTL` within the same
    hour: every queued booking and every quote asks, and each read loaded every launch of those two weeks.
    """
    now = engine.now()
    return engine.remembered(("expected_wait", gpu, now.astimezone(engine.team_tz).hour),
                             ESTIMATE_TTL.total_seconds(), lambda: _estimate(engine, gpu, now), now.timestamp())


def _estimate(engine: Engine, gpu: str, now: datetime) -> WaitEstimate:
    with engine.db.session() as session:
        samples = wait_repo.acquisition_waits(gpu, now - timedelta(days=HISTORY_DAYS), session=session)
    night = night_hours(engine.policy.booking.night_start, engine.policy.booking.night_end)
    return estimate_wait(samples, now, engine.team_tz, night)


def wait_step(engine: Engine, gpu: str) -> ProgressStep:
    """The expected wait for `gpu` at this hour (and at night, when nights fare better), as facts the bot words."""
    model, estimate = GPUS.get(gpu), expected_wait(engine, gpu)
    return ProgressStep(StepKind.WAIT, gpu=model.display if model else gpu, elapsed=estimate.at_hour,
                        samples=estimate.samples, night=estimate.at_night, night_samples=estimate.night_samples,
                        days=HISTORY_DAYS, suggest_night=estimate.suggest_night)


def queued_wait_steps(engine: Engine, booking: Booking) -> list[ProgressStep]:
    """What a queued booking's wait rests on: when the running bookings holding its GPU type end (and its place
    in the queue), with the historical median only when it agrees; the median alone when none is held."""
    now = engine.now()
    with engine.db.session() as session:
        holders = booking_repo.list_bookings(states=ACTIVE_STATES, session=session)
        queued = booking_repo.list_bookings(states=[BookingState.QUEUED], session=session)
    held = [(b.ends_at, b.count) for b in holders if b.gpu == booking.gpu and b.ends_at is not None]
    ahead = [b.count for b in queued if b.gpu == booking.gpu and (b.requested_at, b.id) < (booking.requested_at,
                                                                                             booking.id)]
    estimate = expected_wait(engine, booking.gpu)
    wait = held_wait(now, held, ahead, booking.count, estimate.at_hour,
                     booking.requested_at + engine.policy.acquire.give_up_after)
    if wait is None:
        return [wait_step(engine, booking.gpu)]
    model = GPUS.get(booking.gpu)
    step = ProgressStep(StepKind.HELD, gpu=model.display if model else booking.gpu, elapsed=wait.frees_in,
                        count=wait.holders, other=wait.position, at_least=wait.at_least, too_late=wait.too_late,
                        limit=wait.gives_up_in)
    return [step, wait_step(engine, booking.gpu)] if wait.median is not None else [step]
