"""The Pacer every replica shares: turns at a paced vendor API are booked in the database (db.rate_gates).

The wiring gives it to adapters whose vendor limits the request rate per account (Lambda), so two replicas
together keep the limit that one keeps alone. Turns are wall-clock epoch seconds, because several processes
(possibly several hosts, kept in step by NTP) compare them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gpubot.db import rate_gates
from gpubot.db.database import Database
from gpubot.domain.ports import Gate

__all__ = ["SharedPacer"]


class SharedPacer:
    """Implements domain.ports.Pacer over the ledger database."""

    def __init__(self, db: Database, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._db, self._clock, self._sleep = db, clock, sleep

    def wait_turn(self, *gates: Gate) -> None:
        """Book the next turn free under every gate in the database, then sleep until it comes (outside the
        transaction, so a waiting replica holds no lock)."""
        with self._db.session() as session:
            turn = rate_gates.take_turn(list(gates), self._clock(), session=session)
        wait = turn - self._clock()
        if wait > 0:
            self._sleep(wait)
