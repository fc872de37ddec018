"""The replay's lower bound for one policy's world: its stocks and the work its pieces did, solved as a linear
program (domain.replay_bound)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

from gpubot.domain.replay_bound import BoundJob, BoundStock, LowerBound, solve_bound
from gpubot.providers.registry import kind_named
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.replay.pieces import Piece
from gpubot.scheduling.replay.setup import ReplayConfig

__all__ = ["bound_jobs", "bound_stocks", "lower_bound"]


def bound_stocks(engine: Engine) -> list[BoundStock]:
    """Every enabled provider's GPUs, at their prices in team currency (the team's own machines at 0)."""
    stocks = []
    for name, config in engine.policy.enabled_providers().items():
        replay = kind_named(config.kind).replay
        owned = engine.team_owned(name)
        for place, gpu, count, price, spot in (replay.stock(config) if replay else []):
            stocks.append(BoundStock(f"{name}/{place}", gpu, count,
                                     Decimal(0) if owned or price is None else engine.to_team(price, config.currency),
                                     None if owned or spot is None else engine.to_team(spot, config.currency)))
    return stocks


def bound_jobs(pieces: Sequence[Piece], settings: ReplayConfig, start: datetime, slack_s: int) -> list[BoundJob]:
    """Each job's work as the policy did it (the seconds its pieces ran, work redone after an interruption
    included), from its submission to `slack_s` after it could have ended, or when it did end if later."""
    by_job: dict[str, list[Piece]] = defaultdict(list)
    for piece in pieces:
        if piece.started is not None and piece.ran_s > 0:
            by_job[piece.job.key].append(piece)
    jobs = []
    for ran in by_job.values():
        job = ran[0].job
        ended = max(int((p.started - start).total_seconds()) + p.ran_s for p in ran)
        spot_ok = settings.spot and (job.duration_s <= settings.spot_max_hours * 3600 or any(p.spot for p in ran))
        jobs.append(BoundJob(job.submit_s, job.gpus, job.gpu_type, sum(p.ran_s for p in ran),
                             max(ended, job.submit_s + job.duration_s + slack_s), spot_ok))
    return jobs


def lower_bound(engine: Engine, pieces: Sequence[Piece], settings: ReplayConfig, start: datetime
                ) -> tuple[LowerBound | None, float]:
    """The bound of this policy's world (usage only; None when the program has no solution) and its solve time."""
    began = time.perf_counter()
    stocks = bound_stocks(engine)
    sold = {s.gpu for s in stocks}
    jobs = [j for j in bound_jobs(pieces, settings, start, int(engine.policy.acquire.give_up_after.total_seconds()))
            if j.gpu_type in sold]
    return solve_bound(jobs, stocks, exact_limit=settings.exact_bound_limit), time.perf_counter() - began
