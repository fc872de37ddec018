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
    """Acks in flight, and a wait for `quiet` seconds without one (never longer than `longest` after the ack whose
    work waits). Work whose ack is still the last to have begun `grace` seconds after it starts then: one command
    alone is held back only that long."""

    def __init__(self, quiet: float = 0.1, longest: float = 10.0, grace: float = 0.02) -> None:
        self.quiet, self.longest, self.grace = quiet, longest, grace
        self._in_flight, self._begun, self._last = 0, 0, 0.0
        self._counting = threading.Lock()
        self._one_waiter = threading.Lock()  # the others queue here, asleep: no wake-ups that take the GIL from acks

    @contextmanager
    def acking(self) -> Iterator[None]:
        """Around one ack."""
        with self._counting:
            self._in_flight += 1
            self._begun += 1
        try:
            yield
        finally:
            with self._counting:
                self._in_flight -= 1
                self._last = time.monotonic()

    def mark(self) -> tuple[float, int]:
        """Where the ack in progress stands (taken in it, for `wait`): now, and how many acks have begun."""
        return time.monotonic(), self._begun

    def wait(self, mark: tuple[float, int]) -> None:
        """Unless no ack began within `grace` after the one that took `mark`: until no ack was in flight for `quiet`
        seconds, or `longest` seconds after the mark (under a flood of acks, each command's work starts at most that
        late)."""
        deadline = mark[0] + self.longest
        with self._one_waiter:
            # Without the grace a worker woken by the submit would look before the next ack of a burst began.
            time.sleep(max(0.0, mark[0] + self.grace - time.monotonic()))
            while self._begun != mark[1] and (now := time.monotonic()) < deadline:
                calm_for = 0.0 if self._in_flight else now - self._last
                if calm_for >= self.quiet:
                    return
                time.sleep(min(self.quiet - calm_for, deadline - now))
