"""Per-provider circuit breakers, consulted before launching.

The rule is `domain.breaker`; each provider's state lives in the engine's memory (`scheduling.memory.Breakers`,
which exports it as `gpubot_provider_breaker_open` and logs every change); this module feeds it the outcome of
every probe and launch and filters providers by it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpubot.scheduling.memory import Breakers

if TYPE_CHECKING:
    from gpubot.scheduling.engine import Engine

__all__ = ["breakers_of", "closed_to", "record"]


def breakers_of(engine: Engine) -> Breakers:
    """The engine's breakers."""
    return engine.memory.breakers


def record(engine: Engine, provider: str, kind: str | None) -> None:
    """Feed one outcome of `provider` to its breaker."""
    breakers_of(engine).record(provider, kind, engine.now())


def closed_to(engine: Engine, providers: dict) -> dict:
    """The providers whose breaker lets calls through now."""
    breakers, now = breakers_of(engine), engine.now()
    return {name: p for name, p in providers.items() if breakers.allows(name, now)}
