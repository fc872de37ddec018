"""Acks first: the HTTP route counts the Slack requests it is acking, and the work after an ack (Bolt's dispatch of
a recorded command, the booking it starts) waits for a lull between acks before it begins, so on a busy process it
does not take the CPU (and the GIL) from the acks. The inbox holds the command meanwhile, so a crash loses nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Lull"]


class Lull:
    """Acks in flight, and a wait for `quiet` seconds without one (never longer than `longest` in all)."""

    def __init__(self, quiet: float = 0.1, longest: float = 10.0) -> None:
        self.quiet, self.longest = quiet, longest
        self._in_flight, self._last = 0, 0.0
        self._counting = threading.Lock()
        self._one_waiter = threading.Lock()  # the others queue here, asleep: no wake-ups that take the GIL from acks

    @contextmanager
    def acking(self) -> Iterator[None]:
        """Around one ack."""
        with self._counting:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._counting:
                self._in_flight -= 1
                self._last = time.monotonic()

    def wait(self, since: float) -> None:
        """Until no ack was in flight for `quiet` seconds, or `longest` seconds after `since` (time.monotonic() of
        the ack whose work waits: under a flood of acks, each command's work starts at most that late)."""
        deadline = since + self.longest
        with self._one_waiter:
            while (now := time.monotonic()) < deadline:
                calm_for = 0.0 if self._in_flight else now - self._last
                if calm_for >= self.quiet:
                    return
                time.sleep(min(self.quiet - calm_for, deadline - now))
