"""When a replayed spot booking falls back to on demand, and when a finished job's GPUs are taken back."""

from __future__ import annotations

from datetime import timedelta

from gpubot.domain.replay_rules import finished_reclaim_after, spot_fallback_after

M = timedelta(minutes=1)


def test_a_setting_wins():
    assert spot_fallback_after(5 * M, 40 * M) == 5 * M


def test_three_usual_waits_but_never_under_half_an_hour_and_an_hour_without_history():
    assert spot_fallback_after(None, 20 * M) == 60 * M
    assert spot_fallback_after(None, 2 * M) == 30 * M
    assert spot_fallback_after(None, None) == 60 * M


def test_a_finished_job_is_reclaimed_after_the_idle_window_without_the_grace():
    assert finished_reclaim_after(10 * M, 30 * M, sees_finished=True) == 10 * M
    assert finished_reclaim_after(10 * M, 30 * M, sees_finished=False) == 40 * M
