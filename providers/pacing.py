"""The in-process Pacer: turns under each gate spaced `interval` seconds apart, for the threads of one process.

An adapter uses it when nothing else is injected (tests, the demo, one replica). Replicas that share a database
get scheduling.pacing.SharedPacer from the wiring instead, so their turns are spaced across processes too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from gpubot.domain.ports import Gate

__all__ = ["LocalPacer"]


class LocalPacer:
    """Implements domain.ports.Pacer by reservation: each caller books the next turn free under all its gates,
    then sleeps until it (outside the lock, so one waiting caller never holds the others)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._clock, self._sleep = clock, sleep
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait_turn(self, *gates: Gate) -> None:
        """Block until a turn that keeps every gate."""
        with self._lock:
            now = self._clock()
            turn = max([now, *(self._next.get(key, now) for key, _interval in gates)])
            self._next.update({key: turn + interval for key, interval in gates})
        if turn > now:
            self._sleep(turn - now)
