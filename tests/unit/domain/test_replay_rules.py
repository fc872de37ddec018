"""When a finished job's GPUs are reminded of and taken back in the replay."""

from __future__ import annotations

from datetime import timedelta

from gpubot.domain.policy_sections import IdlePolicy
from gpubot.domain.replay_rules import after_job_end

M = timedelta(minutes=1)


def test_the_no_process_rule_reminds_and_releases_sooner_than_the_utilisation_rule():
    idle = IdlePolicy.model_validate({"for": "10m", "grace": "30m", "no_process_for": "5m",
                                      "no_process_grace": "10m"})
    assert after_job_end(idle, sees_processes=True) == (5 * M, 15 * M)
    assert after_job_end(idle, sees_processes=False) == (10 * M, 40 * M)
