"""Rules the replay applies for the people of a trace: when a finished job's GPUs are reclaimed. (When a spot
booking falls back to on demand is the engine's own rule, domain.spot.fallback_after.)

Pure: durations in, a duration out.
"""

from __future__ import annotations

from datetime import timedelta

__all__ = ["finished_reclaim_after"]


def finished_reclaim_after(idle_for: timedelta, grace: timedelta, sees_finished: bool) -> timedelta:
    """How long after a job's work ended its GPUs are taken back under idle reclaim: the idle window plus the
    reminder's grace when only utilisation is seen; the idle window alone when the agent sees that no process
    holds the GPUs any more (the job is finished, so there is nobody to remind)."""
    return idle_for if sees_finished else idle_for + grace
