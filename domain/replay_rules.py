"""Rules the replay applies for the people of a trace: when a spot booking falls back to on demand, and when a
finished job's GPUs are reclaimed.

Pure: durations in, a duration out.
"""

from __future__ import annotations

from datetime import timedelta

__all__ = ["FALLBACK_FLOOR", "FALLBACK_TIMES", "FALLBACK_WITHOUT_HISTORY", "finished_reclaim_after",
           "spot_fallback_after"]

FALLBACK_TIMES = 3  # a spot booking waits this many times the usual wait for its GPU before it falls back
FALLBACK_FLOOR = timedelta(minutes=30)  # ... and never less: a queue round or two must have had their chance
FALLBACK_WITHOUT_HISTORY = timedelta(hours=1)  # when nothing says how long that GPU usually takes


def spot_fallback_after(setting: timedelta | None, expected_wait: timedelta | None) -> timedelta:
    """How long a spot booking waits for spot capacity before it is booked on demand instead: `setting` when
    given, else `FALLBACK_TIMES` × the expected wait for its GPU (at least `FALLBACK_FLOOR`; one hour with no
    history)."""
    if setting is not None:
        return setting
    if expected_wait is None:
        return FALLBACK_WITHOUT_HISTORY
    return max(FALLBACK_FLOOR, expected_wait * FALLBACK_TIMES)


def finished_reclaim_after(idle_for: timedelta, grace: timedelta, sees_finished: bool) -> timedelta:
    """How long after a job's work ended its GPUs are taken back under idle reclaim: the idle window plus the
    reminder's grace when only utilisation is seen; the idle window alone when the agent sees that no process
    holds the GPUs any more (the job is finished, so there is nobody to remind)."""
    return idle_for if sees_finished else idle_for + grace
