"""The replay's virtual clock (the engine's `clock`, and the simulated clouds' `clock` and `sleep`) and the order of
events due at one moment."""

from __future__ import annotations

from datetime import datetime, timedelta

# The order of events due at the same moment: a sample before the slot's end, an idle check, a submission, then the
# queue's drain.
SAMPLE, EXTEND, CHECK, SUBMIT, DRAIN = range(5)


class VirtualClock:
    """Time that moves only when the replay (or a simulated provider's latency) moves it."""

    def __init__(self, start: datetime) -> None:
        self.start = self.current = start

    def __call__(self) -> datetime:
        """Now (the engine's Clock)."""
        return self.current

    def epoch(self) -> float:
        """Now as epoch seconds (the simulated clouds' clock)."""
        return self.current.timestamp()

    def monotonic(self) -> float:
        """Seconds since the replay started (the offer cache's clock)."""
        return (self.current - self.start).total_seconds()

    def sleep(self, seconds: float) -> None:
        """A provider's latency: time passes, nothing waits."""
        self.current += timedelta(seconds=seconds)

    def move_to(self, moment: datetime) -> None:
        """Jump forward to `moment` (never back: latency may have carried the clock past it)."""
        self.current = max(self.current, moment)
