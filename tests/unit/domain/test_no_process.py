"""The no-process rule: GPUs that no compute process has held for a while (a finished job)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.domain.policy import Policy, telemetry_lookback
from gpubot.domain.policy_sections import IdlePolicy
from gpubot.domain.telemetry import Sample, no_process_since

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
M = timedelta(minutes=1)
FIVE = timedelta(minutes=5)


def _samples(counts: list[int | None], util: float | None = 0.0, gpus: int = 2) -> list[Sample]:
    return [Sample(g, util, 50, T0 + i * M, processes) for i, processes in enumerate(counts) for g in range(gpus)]


def test_no_process_counts_once_every_gpu_has_had_none_for_the_window():
    samples = _samples([1, 1, 0, 0, 0, 0, 0, 0])
    assert no_process_since(samples, 15, FIVE, T0 + 7 * M) == T0 + 2 * M
    assert no_process_since(samples, 15, FIVE, T0 + 6 * M) is None


def test_one_gpu_still_held_means_no_stretch():
    samples = [*_samples([0] * 8), Sample(3, 0.0, 50, T0 + 7 * M, 1)]
    assert no_process_since(samples, 15, FIVE, T0 + 8 * M) is None


def test_an_unknown_count_is_never_no_process():
    """An older agent (no count), a failed query or NVML on a MIG GPU: unknown, not 0."""
    assert no_process_since(_samples([None] * 8), 15, FIVE, T0 + 8 * M) is None
    mixed = [*_samples([0] * 8, gpus=1), *[Sample(1, 0.0, 50, T0 + i * M, None) for i in range(8)]]
    assert no_process_since(mixed, 15, FIVE, T0 + 8 * M) is None
    assert no_process_since(_samples([0, 0, 0, None, 0, 0]), 15, FIVE, T0 + 8 * M) is None


def test_a_busy_gpu_with_no_visible_process_is_not_trusted():
    """A process in another PID namespace is invisible to the agent, but its GPU is busy: not a finished job."""
    assert no_process_since(_samples([0] * 8, util=90.0), 15, FIVE, T0 + 8 * M) is None
    assert no_process_since(_samples([0] * 8, util=15.0), 15, FIVE, T0 + 8 * M) is None
    assert no_process_since(_samples([0] * 8, util=14.9), 15, FIVE, T0 + 8 * M) == T0


def test_a_gpu_without_utilisation_still_counts_its_processes():
    """A MIG-enabled GPU reports no utilisation but nvidia-smi lists its processes."""
    assert no_process_since(_samples([0] * 8, util=None), 15, FIVE, T0 + 8 * M) == T0


def test_the_known_start_carries_a_stretch_longer_than_the_samples_read():
    samples = _samples([0] * 8)
    assert no_process_since(samples, 15, FIVE, T0 + 8 * M, known_start=T0 - 30 * M) == T0 - 30 * M
    started_later = _samples([1, 0, 0, 0, 0, 0, 0, 0])
    assert no_process_since(started_later, 15, FIVE, T0 + 8 * M, known_start=T0 - 30 * M) == T0 + M


def test_the_defaults_remind_sooner_than_the_utilisation_rule():
    idle = IdlePolicy()
    assert idle.no_process_for + idle.no_process_grace < idle.for_ + idle.grace
    assert telemetry_lookback(Policy()) >= 2 * idle.no_process_for
