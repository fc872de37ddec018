"""Reclaim of a finished job's GPUs in the replay: the agent sees no process on them, so after the idle window they
are taken back at once, without the reminder's grace (domain.replay_rules.finished_reclaim_after)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from gpubot.domain.model import Booking
from gpubot.domain.notices import IdleReclaimed, ReleaseWhy
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.billing import finish

__all__ = ["reclaim_finished"]


def reclaim_finished(engine: Engine, booking: Booking, idle_since: datetime) -> Booking:
    """Release a running booking whose job has ended, as idle reclaim does after its grace, and say what it saved."""
    now = engine.now()
    hourly = engine.to_team((booking.price_per_gpu_hour or Decimal(0)) * booking.count,
                            booking.currency or engine.currency)
    left = max(0, int((booking.ends_at - now).total_seconds())) if booking.ends_at else 0
    reclaimed = IdleReclaimed(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                              saved=hourly * Decimal(left) / 3600, currency=engine.currency)
    return finish(engine, booking, ReleaseWhy.IDLE, also=(reclaimed,), idle_for=now - idle_since)
