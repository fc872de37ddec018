"""GPU health: page on-call once when a booked GPU overheats, resolve when it cools down."""

from __future__ import annotations

from gpubot.db import alerts as alert_repo
from gpubot.db import bookings as repo
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import Overheat
from gpubot.domain.telemetry import Sample, latest_per_gpu
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.alerts import raise_alert, resolve_alert

__all__ = ["check_health", "overheat_key", "overheat_prefix"]


_OVERHEAT = "gpubot:overheat:"


def overheat_key(booking_id: int, gpu_index: int) -> str:
    """The stable dedup key of an overheat alert."""
    return f"{overheat_prefix(booking_id)}{gpu_index}"


def overheat_prefix(booking_id: int) -> str:
    """What the overheat alert key of every GPU of a booking starts with."""
    return f"{_OVERHEAT}{booking_id}:"


def check_health(engine: Engine) -> int:
    """Trigger or resolve overheat alerts from the newest readings; returns how many GPUs are hot."""
    with engine.db.session() as session:
        active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
    since = engine.now() - engine.policy.health.telemetry_stale_after
    with engine.db.session() as session:
        recent = telemetry_repo.samples_of([b.id for b in active], since, session=session)
        # Cool GPUs are the rule: resolving only the alerts that are open spares a transaction per GPU per tick.
        hot_before = alert_repo.open_keys(_OVERHEAT, session=session)
    return sum(_check(engine, booking, latest_per_gpu(recent[booking.id]), hot_before) for booking in active)


def _check(engine: Engine, booking: Booking, fresh: list[Sample], hot_before: set[str]) -> int:
    limit = engine.policy.health.max_temp_c
    hot = 0
    for sample in fresh:
        if sample.temp_c is None:  # not reported: neither hot nor cooled down
            continue
        if sample.temp_c > limit:
            hot += 1
            _overheat(engine, booking, sample, limit)
        elif overheat_key(booking.id, sample.gpu_index) in hot_before:
            resolve_alert(engine, overheat_key(booking.id, sample.gpu_index),
                          f"{booking.label} GPU {sample.gpu_index} is back to {sample.temp_c:.0f} °C.")
    return hot


def _overheat(engine: Engine, booking: Booking, sample: Sample, limit: float) -> None:
    where = f"{booking.provider} {booking.region} ({booking.instance_name})"
    # On-call's summary goes to PagerDuty too: plain words, the owner as a bare id.
    summary = (f"{booking.label} GPU {sample.gpu_index} is at {sample.temp_c:.0f} °C (limit {limit:.0f} °C) on "
               f"{where}, owner {booking.owner}, " +
               ("util unknown (MIG)." if sample.util is None else f"util {sample.util:.0f} %."))
    told = Overheat(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                    temp_c=sample.temp_c, gpu_index=sample.gpu_index, limit_c=limit, util=sample.util,
                    provider=booking.provider or "", region=booking.region or "",
                    instance=booking.instance_name or "", at=sample.at)
    raise_alert(engine, "overheat", overheat_key(booking.id, sample.gpu_index), summary, replace=booking.id,
                notices=(told,))
