"""Rules the replay applies for the people of a trace: when a finished job's GPUs are reminded of and taken back
under idle reclaim. (When a spot booking falls back to on demand is the engine's own rule,
domain.spot.fallback_after.)

Pure: a policy's [idle] table in, durations out.
"""

from __future__ import annotations

from datetime import timedelta

from gpubot.domain.policy_sections import IdlePolicy

__all__ = ["after_job_end"]


def after_job_end(idle: IdlePolicy, sees_processes: bool) -> tuple[timedelta, timedelta]:
    """How long after a job's work ended its owner is reminded, and its GPUs are released if nobody answers (idle
    `action = "release"`): the no-process rule's `no_process_for`, then its `no_process_grace`, when the agent
    reports compute processes (none is left once the job ended); else the utilisation rule's `for`, then `grace`."""
    if sees_processes:
        return idle.no_process_for, idle.no_process_for + idle.no_process_grace
    return idle.for_, idle.for_ + idle.grace
