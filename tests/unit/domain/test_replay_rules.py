"""When a finished job's GPUs are taken back in the replay."""

from __future__ import annotations

from datetime import timedelta

from gpubot.domain.replay_rules import finished_reclaim_after

M = timedelta(minutes=1)


def test_a_finished_job_is_reclaimed_after_the_idle_window_without_the_grace():
    assert finished_reclaim_after(10 * M, 30 * M, sees_finished=True) == 10 * M
    assert finished_reclaim_after(10 * M, 30 * M, sees_finished=False) == 40 * M
