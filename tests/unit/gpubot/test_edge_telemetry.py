"""The pushed-telemetry model at the edge: the shapes and ranges a batch must keep, and the status of each refusal."""

from __future__ import annotations

import json

import pytest
from gpubot.domain.telemetry import TelemetryRejected

from gpubot.edge import MAX_GPUS, telemetry_batch


def _body(document: object) -> bytes:
    return json.dumps(document).encode()


def _batch(**gpu) -> dict:
    return {"gpus": [{"index": 0, "util": 37, "temp_c": 71, **gpu}]}


def _refusal(body: bytes) -> TelemetryRejected:
    with pytest.raises(TelemetryRejected) as caught:
        telemetry_batch(body)
    return caught.value


def test_a_valid_batch_becomes_readings_and_unknown_fields_are_ignored():
    body = {"gpus": [{"index": 0, "util": 37, "temp_c": 71, "mem_used_mib": 1000, "mem_total_mib": 81920,
                      "fan": 40}, {"index": 1, "util": 0, "temp_c": 40}], "batch_id": "b-1", "host": "x"}
    batch = telemetry_batch(_body(body))
    readings = batch.readings()
    assert [(r.index, r.util, r.temp_c) for r in readings] == [(0, 37, 71), (1, 0, 40)]
    assert readings[0].mem_total_mib == 81920 and readings[1].mem_used_mib is None
    assert batch.batch_id == "b-1"


@pytest.mark.parametrize("gpu, status, message", [
    ({"util": 101}, 422, "gpus[].util=101 is out of range (0..100)"),
    ({"util": -1}, 422, "gpus[].util=-1 is out of range (0..100)"),
    ({"temp_c": -21}, 422, "gpus[].temp_c=-21 is out of range (-20..150)"),
    ({"temp_c": 151}, 422, "gpus[].temp_c=151 is out of range (-20..150)"),
    ({"index": 99}, 422, "gpus[].index=99 is out of range (0..63)"),
    ({"mem_used_mib": -5}, 422, "gpus[].mem_used_mib=-5 is out of range (0..1e+07)"),
    ({"util": "high"}, 400, "gpus[].util must be a number"),
    ({"util": "37"}, 400, "gpus[].util must be a number"),
    ({"temp_c": "hot"}, 400, "gpus[].temp_c must be a number"),
    ({"util": True}, 400, "gpus[].util must be a number"),
    ({"mem_total_mib": [1]}, 400, "gpus[].mem_total_mib must be a number"),
])
def test_out_of_range_values_are_422_and_wrong_types_400(gpu, status, message):
    refused = _refusal(_body(_batch(**gpu)))
    assert (refused.status, str(refused)) == (status, message)


def test_a_field_the_gpu_does_not_report_is_unknown_but_a_gpu_reporting_neither_is_422():
    """A MIG-enabled GPU reports no utilisation: its temperature still counts (left out or null alike)."""
    readings = telemetry_batch(_body({"gpus": [{"index": 0, "temp_c": 91, "mig": True},
                                               {"index": 1, "util": None, "temp_c": 50},
                                               {"index": 2, "util": 5}]})).readings()
    assert [(r.util, r.temp_c) for r in readings] == [(None, 91), (None, 50), (5, None)]
    refused = _refusal(_body({"gpus": [{"index": 0, "util": 5}, {"index": 3, "util": None}]}))
    assert (refused.status, str(refused)) == (422, "GPU 3 has neither util nor temp_c")


@pytest.mark.parametrize("payload", [None, [], {}, {"gpus": []}, {"gpus": "x"}, {"gpus": [1]}, 7])
def test_wrong_shapes_are_400(payload):
    assert _refusal(_body(payload)).status == 400


def test_more_gpus_than_a_machine_has_is_422_even_when_the_entries_are_bad():
    gpus = [{"index": i % MAX_GPUS, "util": 1, "temp_c": 40} for i in range(MAX_GPUS)]
    assert len(telemetry_batch(_body({"gpus": gpus})).readings()) == MAX_GPUS
    assert _refusal(_body({"gpus": [*gpus, gpus[0]]})).status == 422
    assert str(_refusal(_body({"gpus": ["x"] * (MAX_GPUS + 1)}))) == f"at most {MAX_GPUS} GPUs per batch"


@pytest.mark.parametrize("body", [b'{"gpus": [', b"\xff\xfe", b"", b"NaN-ish"])
def test_malformed_json_is_400(body):
    assert (_refusal(body).status, str(_refusal(body))) == (400, "malformed JSON")


@pytest.mark.parametrize("levels", [9, 100_000])
def test_nesting_deeper_than_a_batch_needs_is_400(levels):
    deep = b'{"gpus": ' + b"[" * levels + b"]" * levels + b"}"
    refused = _refusal(deep)
    assert (refused.status, str(refused)) == (400, "JSON nested more than 8 levels")


@pytest.mark.parametrize("batch_id", [1.5, {"a": 1}, "x" * 201])
def test_a_batch_id_is_a_short_string_or_an_integer(batch_id):
    assert _refusal(_body({**_batch(), "batch_id": batch_id})).status == 400
    assert telemetry_batch(_body({**_batch(), "batch_id": 7})).batch_id == 7


def test_process_counts_are_optional_and_checked():
    """Agents before the no-process rule send no count: unknown (None), never 0."""
    [old] = telemetry_batch(_body(_batch())).readings()
    assert old.processes is None and old.process_mem_mib is None
    [new] = telemetry_batch(_body(_batch(processes=0, process_mem_mib=0))).readings()
    assert (new.processes, new.process_mem_mib) == (0, 0.0)
    [held] = telemetry_batch(_body(_batch(processes=3, process_mem_mib=1542.5))).readings()
    assert (held.processes, held.process_mem_mib) == (3, 1542.5)
    assert _refusal(_body(_batch(processes=-1))).status == 422
    assert _refusal(_body(_batch(processes=1.5))).status == 400
    assert _refusal(_body(_batch(processes="2"))).status == 400
    assert _refusal(_body(_batch(process_mem_mib=-5))).status == 422
