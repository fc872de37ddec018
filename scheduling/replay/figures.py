"""A policy's figures, read back from the replay's ledger with the same costing code the reports use."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.db import bookings as booking_repo
from gpubot.db import reports as reports_db
from gpubot.domain.costing import idle_gpu_seconds
from gpubot.domain.replay_report import PolicyFigures, fee_for_span, percentile
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.ledger_costs import cost_items, monthly_fees, months_between
from gpubot.scheduling.replay.bound import lower_bound
from gpubot.scheduling.replay.pieces import Piece
from gpubot.scheduling.replay.setup import ReplayConfig

__all__ = ["collect"]

_HOUR = Decimal(3600)


def _idle(engine: Engine, pieces: Sequence[Piece], since: datetime, until: datetime) -> tuple[int, Decimal]:
    """Idle GPU-seconds and their cost: every sample holds until the next (the replay writes one at each
    change of utilisation), cut to the time the booking was held."""
    ids = [p.booking_id for p in pieces if p.started and p.booking_id]
    with engine.db.session() as session:
        samples = reports_db.samples_for(ids, since, until + timedelta(seconds=1), session=session)
        bookings = booking_repo.bookings_by_id(samples, session=session)
    seconds, cost = 0, Decimal(0)
    for booking_id, readings in samples.items():
        booking = bookings[booking_id]
        idle = idle_gpu_seconds(readings, engine.policy.idle.util_below, booking.started_at,
                                booking.released_at or until, until - since) * booking.count
        seconds += idle
        cost += engine.to_team(booking.price_per_gpu_hour or Decimal(0), booking.currency or engine.currency
                               ) * idle / _HOUR
    return seconds, cost


def _pool_fees(engine: Engine, since: datetime, until: datetime) -> dict[str, Decimal]:
    """Each team-owned provider's monthly fees over the replayed span, used or not: the team pays for the
    machines."""
    months = months_between(engine, since, until)
    fees = {name: (config, monthly_fees(config)) for name, config in engine.policy.enabled_providers().items()}
    return {name: sum((engine.to_team(fee_for_span(fee, months, since, until), config.currency)
                       for _host, fee in hosts), Decimal(0))
            for name, (config, hosts) in fees.items() if hosts is not None}


def collect(engine: Engine, name: str, pieces: Sequence[Piece], since: datetime, until: datetime,
            reminders: int, elapsed: float, settings: ReplayConfig) -> PolicyFigures:
    """Spend (usage, and pools' fees) by provider, GPU-hours, idle waste, reclaims, waits, failures, and the
    lower bound of the policy's world."""
    with engine.db.session() as session:
        items = [i for i in cost_items(engine, since, until, session=session) if i.kind == "usage"]
    by_provider: dict[str, Decimal] = defaultdict(Decimal)
    for item in items:
        by_provider[item.provider] += item.amount
    by_provider.update(_pool_fees(engine, since, until))
    idle_s, idle_cost = _idle(engine, pieces, since, until)
    waits = [p.wait_s for p in pieces if p.wait_s is not None]
    resumed = [p.resume_wait_s for p in pieces if p.resume_wait_s is not None]
    fees = sum(_pool_fees(engine, since, until).values(), Decimal(0))
    longest = engine.policy.booking.max_duration.total_seconds()
    bound, bound_seconds = lower_bound(engine, pieces, settings, since)
    return PolicyFigures(
        policy=name, spend=sum(by_provider.values(), Decimal(0)),
        gpu_hours=Decimal(sum(i.gpu_seconds for i in items if i.kind == "usage")) / _HOUR,
        work_gpu_hours=Decimal(sum(p.ran_s * p.job.gpus for p in pieces)) / _HOUR,
        idle_gpu_hours=Decimal(idle_s) / _HOUR, idle_cost=idle_cost,
        reclaimed_gpu_hours=Decimal(sum(p.reclaimed_gpu_s for p in pieces)) / _HOUR,
        reclaims=sum(p.outcome == "reclaimed" for p in pieces),
        wait_p50_s=percentile(waits, 50), wait_p95_s=percentile(waits, 95),
        failed=sum(p.outcome in ("failed", "refused") for p in pieces), jobs=len({p.job.key for p in pieces}),
        bookings=len(pieces), requeued=sum(p.offset_s > 0 for p in pieces),
        extensions=sum(p.extensions for p in pieces), reminders=reminders,
        spend_by_provider=dict(sorted(by_provider.items())), replay_seconds=round(elapsed, 2),
        lower_bound=(bound.cost + fees).quantize(Decimal("0.01")) if bound else Decimal(0),
        bound_method=bound.method if bound else "none",
        bound_seconds=round(bound_seconds, 2),
        long_jobs=len({p.job.key for p in pieces if p.job.duration_s > longest}),
        **_interruptions(pieces), resume_wait_p50_s=percentile(resumed, 50), resume_wait_p95_s=percentile(resumed, 95))


def _interruptions(pieces: Sequence[Piece]) -> dict:
    """How many spot pieces ran, how many were interrupted, of how many jobs, and the work it cost (GPU-hours)."""
    hit = [p for p in pieces if p.interrupted_at]
    return {"spot_bookings": sum(p.spot and p.started is not None for p in pieces),
            "fell_back": sum(p.outcome == "fell-back" for p in pieces),
            "waited_cheaper": sum(p.waited_cheaper for p in pieces),
            "rebooked": sum(p.outcome == "expired-requeued" for p in pieces),
            "interruptions": len(hit), "interrupted_jobs": len({p.job.key for p in hit}),
            "redone_gpu_hours": Decimal(sum(p.redone_s * p.job.gpus for p in hit)) / _HOUR,
            "dropped_gpu_hours": Decimal(sum(p.dropped_s * p.job.gpus for p in hit)) / _HOUR}
