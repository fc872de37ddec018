"""The one English wording of progress steps the engine keeps: for the failure column and on-call's summaries."""

from __future__ import annotations

from datetime import timedelta

from gpubot.domain.notices import ProgressStep, StepKind
from gpubot.domain.progress_for_operators import trail_text


def test_a_failed_round_reads_as_before_for_operators():
    trail = [ProgressStep(StepKind.LAUNCH_FAILED, provider="lambda", region="us-east-1", outcome="no_capacity"),
             ProgressStep(StepKind.OVER_BUDGET, provider="aws", region="us-west-2"),
             ProgressStep(StepKind.BOOT_ABANDONED, provider="autodl", region="westDC2", outcome="not_ready",
                          elapsed=timedelta(minutes=15), limit=timedelta(minutes=15)),
             ProgressStep(StepKind.LAUNCH_FAILED, provider="runpod", region="eu", outcome="transient")]
    assert trail_text(trail) == ("lambda us-east-1: no capacity; aws us-west-2: over budget; autodl westDC2 was not "
                                 "reachable after 15m; it was terminated (its 15m of booting are billed); runpod eu: "
                                 "error")
    assert trail_text(trail[:2], " → ") == "lambda us-east-1: no capacity → aws us-west-2: over budget"
    assert trail_text([]) == ""
