"""The replay's world: a fresh SQLite ledger, simulated clouds and the pool on the virtual clock, the engine."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from gpubot.db.database import Database
from gpubot.domain.errors import ConfigError
from gpubot.domain.policy import Policy
from gpubot.domain.ports import Provider
from gpubot.providers.registry import BuildContext, GpuSlots, all_kinds, build_provider
from gpubot.scheduling.acquisition.pool import pool_allocations
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.memory import OfferCache
from gpubot.scheduling.probe import InlineExecutor
from gpubot.scheduling.replay.clock import VirtualClock

__all__ = ["build_engine"]


def _providers(policy: Policy, clock: VirtualClock, db: Database) -> dict[str, Provider]:
    """Every enabled provider, built by its kind on the virtual clock; a kind that cannot replay is refused."""
    replayable = [name for name, kind in all_kinds().items() if kind.replay is not None]
    # Who holds a team machine's GPUs is read from the ledger; one thread replays, so no claims are needed.
    context = BuildContext(slots=GpuSlots(held=partial(pool_allocations, db)), clock=clock.epoch, sleep=clock.sleep)
    built: dict[str, Provider] = {}
    for name, config in policy.enabled_providers().items():
        if config.kind not in replayable:
            raise ConfigError(f"providers.{name}.kind", config.kind,
                              f"{' or '.join(map(repr, replayable))} (a replay never calls a real cloud)")
        built[name] = build_provider(name, config, context)
    return built


def _ledger(directory: Path) -> Database:
    """A migrated SQLite ledger in memory: migrated as a file in `directory`, then copied into memory. The replay
    is one thread, so every session shares the one in-memory connection (SQLAlchemy keeps one per thread), and no
    commit writes a file (about 5 % of a replay's CPU went to the file's commits)."""
    migrated = Database(f"sqlite:///{directory / 'replay.db'}")
    migrated.upgrade()
    db = Database("sqlite:///:memory:")
    source, target = migrated.engine.raw_connection(), db.engine.raw_connection()
    try:
        source.driver_connection.backup(target.driver_connection)
    finally:
        source.close()
        target.close()
    migrated.dispose()
    return db


def build_engine(policy: Policy, clock: VirtualClock, directory: Path) -> Engine:
    """A real engine on a migrated SQLite ledger (in memory), recording instead of sending."""
    db = _ledger(directory)
    # The clouds answer in-process on the virtual clock: probing them in threads would overlap no waiting.
    engine = Engine(db=db, policy=policy, providers=_providers(policy, clock, db),
                    clock=clock, probe_executor=InlineExecutor(), shows_progress=False)
    # The offer cache must age on the virtual clock, not the wall clock, or a replayed hour would reuse offers.
    engine.memory.offers = OfferCache(policy.acquire.offer_cache.total_seconds(), monotonic=clock.monotonic)
    return engine
