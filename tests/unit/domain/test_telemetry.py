"""Telemetry rules: validating pushed batches, idle stretches, overheating."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from gpubot.domain.telemetry import Sample, TelemetryRejected, decode_batch, hot_gpus, idle_since, parse_readings

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def _batch(**gpu) -> dict:
    return {"gpus": [{"index": 0, "util": 37, "temp_c": 71, **gpu}]}


def test_a_valid_batch_becomes_readings():
    body = {"gpus": [{"index": 0, "util": 37, "temp_c": 71, "mem_used_mib": 1000, "mem_total_mib": 81920},
                     {"index": 1, "util": 0, "temp_c": 40}]}
    readings = parse_readings(body)
    assert [(r.index, r.util, r.temp_c) for r in readings] == [(0, 37, 71), (1, 0, 40)]
    assert readings[0].mem_total_mib == 81920 and readings[1].mem_used_mib is None


@pytest.mark.parametrize("gpu, status", [
    ({"util": 101}, 422), ({"util": -1}, 422), ({"temp_c": -21}, 422), ({"temp_c": 151}, 422),
    ({"util": "high"}, 400), ({"temp_c": None}, 400), ({"index": 99}, 422), ({"util": True}, 400),
])
def test_out_of_range_or_wrong_types_are_rejected(gpu, status):
    with pytest.raises(TelemetryRejected) as caught:
        parse_readings(_batch(**gpu))
    assert caught.value.status == status


@pytest.mark.parametrize("payload", [None, [], {}, {"gpus": []}, {"gpus": "x"}, {"gpus": [1]}])
def test_wrong_shapes_are_400(payload):
    with pytest.raises(TelemetryRejected) as caught:
        parse_readings(payload)
    assert caught.value.status == 400


def test_malformed_json_is_400():
    with pytest.raises(TelemetryRejected) as caught:
        decode_batch(b'{"gpus": [')
    assert caught.value.status == 400
    assert decode_batch(json.dumps(_batch()).encode()) == _batch()


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
