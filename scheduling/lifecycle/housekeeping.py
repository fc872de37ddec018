"""Housekeeping: delete finished rows of the tables that only grow, in bounded batches (each its own short
transaction, so neither SQLite's write lock nor PostgreSQL's row locks are held long).

Kept for ever: the ledger (bookings, usage intervals, launch intents, acquisition attempts). Deleted: commands
in the inbox done more than a day ago, notices of ended bookings delivered or given up more than
`retention.notices` ago (never one still owed), telemetry samples older than `retention.telemetry`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from gpubot.db import inbox, outbox
from gpubot.db import telemetry as telemetry_repo
from gpubot.db.database import Database
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
    """Delete what has outlived its retention; how many rows went, per table."""
    now, retention = engine.now(), engine.policy.retention
    db = engine.db
    deleted = {"inbox": _prune(db.inbox, inbox.prune_done, now - INBOX_KEEP, batch, max_batches),
               "outbox": _prune(db, outbox.prune_finished, now - retention.notices, batch, max_batches),
               "telemetry_samples": _prune(db, telemetry_repo.prune_samples, now - retention.telemetry, batch,
                                           max_batches)}
    if any(deleted.values()):
        log.info("housekeeping deleted %s", ", ".join(f"{n} {table} rows" for table, n in deleted.items() if n))
    return deleted


def _prune(db: Database, prune: Prune, before: datetime, batch: int, max_batches: int) -> int:
    total = 0
    for _ in range(max_batches):
        with db.session() as session:
            gone = prune(before, batch, session=session)
        total += gone
        if gone < batch:
            break
    return total
