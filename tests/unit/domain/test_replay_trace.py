"""Replay traces: parsing, slot rounding, idle stretches (own and drawn) and a piece's utilisation timeline."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from gpubot.domain.replay_trace import (
    Stretch,
    TraceError,
    booked_seconds,
    draw_stretches,
    idle_stretches,
    job_stretches,
    parse_columns,
    parse_jobs,
    parse_util,
    remap_rows,
    trace_assumptions,
    transitions,
)

PHILLY_ROW = {"job_id": "application_1", "submit_time_s": "847", "gpus": "8", "gpu_type": "12GB",
              "duration_s": "3517", "mean_gpu_util": "", "util_sample_minutes": "0", "start_time_s": "863",
              "queue_s": "16", "status": "Pass", "vc": "6c71a0", "user": "8a5686", "num_machines": "1"}


def test_philly_columns_map_to_jobs_with_the_configured_gpu_type():
    [job] = parse_jobs([PHILLY_ROW], {"12GB": "v100"})
    assert (job.key, job.submit_s, job.gpus, job.gpu_type, job.duration_s) == ("application_1", 847, 8, "v100", 3517)
    assert (job.user, job.project) == ("8a5686", "6c71a0")


def test_jobs_come_back_in_submission_order():
    rows = [{"job": "b", "submit_time_s": "50", "gpus": "1", "gpu_type": "a100", "duration_s": "60"},
            {"job": "a", "submit_time_s": "10", "gpus": "2", "gpu_type": "a100", "duration_s": "60"}]
    assert [j.key for j in parse_jobs(rows)] == ["a", "b"]


@pytest.mark.parametrize(("change", "message"), [
    ({"gpus": "two"}, "line 2: gpus must be a number, got 'two'"),
    ({"gpus": "0"}, "line 2: gpus must be a number > 0, got '0'"),
    ({"duration_s": "0"}, "line 2: duration_s must be a number ≥ 1"),
    ({"submit_time_s": "-5"}, "line 2: submit_time_s must be a number ≥ 0"),
    ({"gpu_type": " "}, "line 2: gpu_type is empty"),
])
def test_a_bad_row_is_named_by_line_and_column(change, message):
    with pytest.raises(TraceError, match=message):
        parse_jobs([{**PHILLY_ROW, **change}])


def test_missing_columns_and_duplicates_are_refused():
    with pytest.raises(TraceError, match="missing column\\(s\\) duration_s"):
        parse_jobs([{"submit_time_s": "1", "gpus": "1", "gpu_type": "a100"}])
    with pytest.raises(TraceError, match="appears twice"):
        parse_jobs([PHILLY_ROW, PHILLY_ROW])
    with pytest.raises(TraceError, match="no jobs"):
        parse_jobs([])


def test_util_rows_are_grouped_per_job_in_time_order():
    rows = [{"job_id": "j", "t_s": "120", "gpu_util": "5"}, {"job": "j", "t_s": "60", "gpu_util": "90.5"}]
    assert parse_util(rows) == {"j": [(60, 90.5), (120, 5.0)]}
    with pytest.raises(TraceError, match=r"gpu_util must be 0\.\.100"):
        parse_util([{"job": "j", "t_s": "1", "gpu_util": "101"}])


@pytest.mark.parametrize(("run_s", "factor", "booked_h"), [
    (3600, 1.5, 2), (2400, 1.5, 1), (7200, 1.5, 3), (1, 1.5, 1), (7200, 1.0, 2), (7201, 1.0, 3), (14819, 1.5, 7)])
def test_a_slot_is_the_run_times_the_factor_rounded_up_to_the_hour(run_s, factor, booked_h):
    assert booked_seconds(run_s, factor) == booked_h * 3600


def test_idle_stretches_are_runs_of_low_minutes_and_a_gap_ends_one():
    samples = [(0, 90), (60, 5), (120, 3), (180, 80), (240, 1), (600, 2), (660, 4)]
    assert idle_stretches(samples, 15) == [Stretch(60, 180, 4.0), Stretch(240, 300, 1.0), Stretch(600, 720, 3.0)]
    assert idle_stretches([(0, 50), (60, 99)], 15) == []


def test_drawn_stretches_keep_their_length_at_the_same_relative_place_and_are_reproducible():
    donors = [(10_000, [Stretch(5_000, 5_600, 2.0)])]
    assert draw_stretches(random.Random(1), donors, 2_000) == [Stretch(1_000, 1_600, 2.0)]
    assert draw_stretches(random.Random(1), donors, 1_200) == [Stretch(600, 1_200, 2.0)]  # cut at the job's end
    assert draw_stretches(random.Random(1), [], 100) == []
    many = [(1_000, [Stretch(i, i + 10, 1.0)]) for i in range(50)]
    assert draw_stretches(random.Random(7), many, 1_000) == draw_stretches(random.Random(7), many, 1_000)


def test_jobs_without_samples_draw_from_jobs_with_samples():
    jobs = parse_jobs([{"job": k, "submit_time_s": "0", "gpus": "2", "gpu_type": "v100", "duration_s": "1200"}
                       for k in ("own", "none")])
    stretches = job_stretches(jobs, {"own": [(60, 2.0), (120, 2.0)]}, 15, seed=3)
    assert stretches == {"own": [Stretch(60, 180, 2.0)], "none": [Stretch(60, 180, 2.0)]}


def test_a_pieces_timeline_starts_busy_marks_each_stretch_and_ends_idle_when_done():
    stretches = [Stretch(600, 1_200, 4.0), Stretch(3_000, 3_600, 1.0)]
    assert transitions(stretches, 0, 3_600, 80) == [(0, 80), (600, 4.0), (1_200, 80), (3_000, 1.0), (3_600, 0.0)]
    # resumed at job time 1_000: the first stretch's rest comes first, times are from the piece's start
    assert transitions(stretches, 1_000, 4_000, 80) == [(0, 4.0), (200, 80), (2_000, 1.0), (2_600, 80),
                                                       (3_000, 0.0)]


def test_a_fraction_of_a_gpu_is_booked_as_a_whole_one_and_remembered():
    rows = [{"job": "a", "submit_time_s": "0", "gpus": "0.25", "gpu_type": "t4", "duration_s": "7200"},
            {"job": "b", "submit_time_s": "0", "gpus": "2", "gpu_type": "t4", "duration_s": "3600"}]
    a, b = parse_jobs(rows)
    assert (a.gpus, a.asked_gpus, b.gpus, b.asked_gpus) == (1, 0.25, 2, None)
    assumed = trace_assumptions([a, b], {"b": [(0, 50.0)]})
    assert (assumed.rounded, assumed.rounded_gpu_hours) == (1, Decimal("1.5"))  # 0.75 GPU × 2 h
    assert (assumed.measured, assumed.drawn, assumed.busy) == (1, 1, 0)
    assert (trace_assumptions([a, b], {}).busy, trace_assumptions([a, b], {}).drawn) == (2, 0)


def test_columns_map_another_traces_names_and_iso_submission_times():
    mapping = parse_columns("submit=creation_time, duration=runtime,gpus=num_gpu,gpu_type=gpu_spec,job=name")
    rows = [{"name": "p1", "creation_time": "2023-05-01T10:00:00Z", "runtime": "600", "num_gpu": "0.5",
             "gpu_spec": "T4"},
            {"name": "p2", "creation_time": "2023-05-01T09:00:00+00:00", "runtime": "60", "num_gpu": "1",
             "gpu_spec": "A10"}]
    jobs = parse_jobs(remap_rows(rows, mapping))
    assert [(j.key, j.submit_s, j.gpus, j.gpu_type, j.duration_s) for j in jobs] == [
        ("p2", 0, 1, "A10", 60), ("p1", 3600, 1, "T4", 600)]


@pytest.mark.parametrize(("text", "message"), [
    ("submit", "'submit' is not NAME=COLUMN"),
    ("start=created", "unknown name 'start'"),
])
def test_a_bad_column_mapping_is_named(text, message):
    with pytest.raises(TraceError, match=message):
        parse_columns(text)


def test_a_mapped_column_the_trace_lacks_or_a_bad_time_is_named():
    rows = [{"created": "yesterday", "runtime": "60", "gpus": "1", "gpu_type": "T4"}]
    with pytest.raises(TraceError, match="the trace has no column nope"):
        remap_rows(rows, {"submit": "nope"})
    with pytest.raises(TraceError, match="line 2: submit must be seconds or an ISO date, got 'yesterday'"):
        remap_rows(rows, {"submit": "created", "duration": "runtime"})
    with pytest.raises(TraceError, match="has no time zone"):
        remap_rows([{**rows[0], "created": "2023-05-01T10:00:00"}], {"submit": "created"})
