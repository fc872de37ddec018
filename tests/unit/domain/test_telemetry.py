"""Telemetry rules: idle stretches, overheating."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.domain.costing import idle_gpu_seconds
from gpubot.domain.telemetry import Sample, hot_gpus, idle_since, latest_per_gpu, utilisation_unknown

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def _samples(utils: list[float], step_s: int = 60, gpus: int = 2) -> list[Sample]:
    return [Sample(g, u, 50, T0 + timedelta(seconds=i * step_s)) for i, u in enumerate(utils) for g in range(gpus)]


def test_idle_counts_once_every_gpu_stays_below_for_the_window():
    samples = _samples([80, 10, 5, 3, 2, 1, 0, 0, 0, 0, 0, 0])
    now = T0 + timedelta(minutes=11)
    assert idle_since(samples, 15, timedelta(minutes=10), now) == T0 + timedelta(minutes=1)
    assert idle_since(samples, 15, timedelta(minutes=10), T0 + timedelta(minutes=10)) is None


def test_one_busy_gpu_means_not_idle():
    samples = [*_samples([0] * 12), Sample(3, 90, 50, T0 + timedelta(minutes=11))]
    assert idle_since(samples, 15, timedelta(minutes=10), T0 + timedelta(minutes=12)) is None


def test_exactly_at_the_threshold_is_not_idle():
    assert idle_since(_samples([15] * 12), 15, timedelta(minutes=10), T0 + timedelta(minutes=12)) is None


def test_hot_gpus_are_those_above_the_limit():
    latest = [Sample(0, 50, 85, T0), Sample(1, 50, 85.5, T0), Sample(2, 50, 90, T0)]
    assert [s.gpu_index for s in hot_gpus(latest, 85)] == [1, 2]


def test_unknown_utilisation_is_never_idle():
    """A MIG-enabled GPU reports no utilisation: its booking is not idle, however long the others sit at 0 %."""
    samples = [*_samples([0] * 12, gpus=1), *[Sample(1, None, 53, T0 + timedelta(minutes=i)) for i in range(12)]]
    assert idle_since(samples, 15, timedelta(minutes=10), T0 + timedelta(minutes=12)) is None
    assert utilisation_unknown(latest_per_gpu(samples)) == [1]
    assert utilisation_unknown(latest_per_gpu(_samples([0] * 3))) == []


def test_unknown_temperature_is_not_hot_and_unknown_utilisation_still_is():
    latest = [Sample(0, None, 91, T0), Sample(1, 50, None, T0)]
    assert [s.gpu_index for s in hot_gpus(latest, 85)] == [0]


def test_unknown_utilisation_is_never_counted_as_waste():
    readings = [(0, None, T0), (0, None, T0), (0, 0.0, T0 + timedelta(minutes=1))]
    assert idle_gpu_seconds(readings, 15, T0, T0 + timedelta(minutes=2), timedelta(minutes=5)) == 60


def test_a_push_counts_as_taken_at_the_start_of_its_agent_interval():
    from gpubot.domain.telemetry import sample_time

    at = T0 + timedelta(seconds=37, milliseconds=400)
    assert sample_time(at, 15) == T0 + timedelta(seconds=30)
    assert sample_time(at, 1) == T0 + timedelta(seconds=37)
    assert sample_time(at, 0.5) == T0 + timedelta(seconds=37)  # whole seconds at least
