"""Once-only effects: the guard that an inbound repeat (a click, a telemetry batch) acts once. What the bot sends
is deduplicated by the outbox's keys instead (scheduling.delivery.tell)."""

from __future__ import annotations

from gpubot.db import effects as effect_repo
from gpubot.scheduling.engine import Engine

__all__ = ["once"]


def once(engine: Engine, key: str) -> bool:
    """True the first time `key` is claimed, across restarts and replicas; False ever after."""
    with engine.db.session() as session:
        return effect_repo.claim_effect(key, engine.now(), session=session)
