"""Housekeeping: delete finished rows of the tables that only grow, in bounded batches (each its own short
transaction, so neither SQLite's write lock nor PostgreSQL's row locks are held long).

Kept for ever: the ledger (bookings, usage intervals, launch intents, acquisition attempts). Deleted: commands
in the inbox done more than a day ago, notices of ended bookings delivered or given up more than
`retention.notices` ago (never one still owed), telemetry older than `retention.telemetry`.

Rolled up: telemetry samples older than the longest window the idle and health checks read (`telemetry_lookback`,
whole `retention.telemetry_rollup` intervals) become one row per booking, GPU and interval, and the samples go,
in the same transaction (db/telemetry_rollups.py); reports and the replay read the roll-ups for those periods.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from gpubot.db import inbox, outbox, telemetry_rollups
from gpubot.db import telemetry as telemetry_repo
from gpubot.db.database import Database
from gpubot.domain.policy import rollup_interval, telemetry_lookback
from gpubot.scheduling.engine import Engine

__all__ = ["BATCH", "INBOX_KEEP", "MAX_BATCHES", "housekeep"]

log = logging.getLogger(__name__)

# Slack retries a command for minutes and its response_url lives 30 minutes; a day leaves room to look into one.
# A replayed body is refused long before: its signature's timestamp is older than five minutes.
INBOX_KEEP = timedelta(days=1)
BATCH = 1000  # rows per delete statement and transaction
MAX_BATCHES = 50  # per table and run: a backlog is worked off over several runs, none of them long

Prune = Callable[..., int]


def housekeep(engine: Engine, batch: int = BATCH, max_batches: int = MAX_BATCHES) -> dict[str, int]:
    """Delete what has outlived its retention and roll up old telemetry; how many rows went, per table (and
    `telemetry_rolled_up`: samples rolled up)."""
    now, retention = engine.now(), engine.policy.retention
    db, interval = engine.db, rollup_interval(engine.policy)
    deleted = {"inbox": _prune(db.inbox, inbox.prune_done, now - INBOX_KEEP, batch, max_batches),
               "outbox": _prune(db, outbox.prune_finished, now - retention.notices, batch, max_batches),
               "telemetry_samples": _prune(db, telemetry_repo.prune_samples, now - retention.telemetry, batch,
                                           max_batches),
               "telemetry_rollups": _prune(db, telemetry_rollups.prune_rollups, now - retention.telemetry, batch,
                                           max_batches)}
    kept_from = now - retention.telemetry
    rolled = _prune(db, lambda before, limit, *, session: telemetry_rollups.roll_up(
        before, interval, limit, session=session, after=kept_from),
                    telemetry_rollups.bucket_of(now - telemetry_lookback(engine.policy), interval), batch, max_batches)
    if any(deleted.values()) or rolled:
        log.info("housekeeping deleted %s; rolled up %d telemetry samples", ", ".join(
            f"{n} {table} rows" for table, n in deleted.items() if n) or "nothing", rolled)
    return {**deleted, "telemetry_rolled_up": rolled}


def _prune(db: Database, prune: Prune, before: datetime, batch: int, max_batches: int) -> int:
    total = 0
    for _ in range(max_batches):
        with db.session() as session:
            gone = prune(before, batch, session=session)
        total += gone
        if gone < batch:
            break
    return total
