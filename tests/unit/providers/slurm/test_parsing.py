"""The parsers read what a real Slurm printed (captures/README.md says how each file was made)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from gpubot.providers.slurm.parsing import (
    Gres,
    SlurmParseError,
    cluster_reason,
    parse_duration,
    parse_gres,
    parse_jobs,
    parse_nodes,
    parse_partition,
    parse_records,
    parse_submitted,
    parse_time,
)

CAPTURES = Path(__file__).parent / "captures"


def captured(name: str) -> str:
    return (CAPTURES / name).read_text()


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"2026-12-01T{clock}").replace(tzinfo=UTC)


def test_an_idle_node_has_every_gpu_free() -> None:
    [node] = parse_nodes(captured("node_idle.txt"))
    assert (node.name, node.state, node.partitions) == ("gpunode1", "IDLE", ("gpu",))
    assert node.gpus == {"a100": 4, "h100": 4} and node.gpus_used == {"a100": 0, "h100": 0}
    assert (node.free_gpus("a100"), node.free_gpus("h100"), node.free_gpus("v100")) == (4, 4, 0)
    assert (node.cpus, node.cpus_allocated, node.open) == (16, 0, True)


def test_a_busy_node_counts_what_its_jobs_hold() -> None:
    [node] = parse_nodes(captured("node_busy.txt"))
    assert node.state == "MIXED" and node.open
    assert node.gpus_used == {"a100": 2, "h100": 4}
    assert (node.free_gpus("a100"), node.free_gpus("h100")) == (2, 0)
    assert node.cpus_allocated == 3


@pytest.mark.parametrize(("state", "open_"), [("IDLE", True), ("MIXED", True), ("ALLOCATED", True),
                                              ("IDLE+DRAIN", False), ("MIXED+DRAIN", False), ("DOWN*", False),
                                              ("DOWN+NOT_RESPONDING", False), ("IDLE+POWERED_DOWN", True),
                                              ("IDLE+MAINT", False), ("FUTURE", False)])
def test_a_node_takes_new_jobs_unless_down_drained_or_failing(state: str, open_: bool) -> None:
    text = captured("node_idle.txt").replace("State=IDLE", f"State={state}")
    assert parse_nodes(text)[0].open is open_


def test_a_value_with_spaces_stays_whole_and_keys_may_repeat() -> None:
    [pairs] = parse_records(captured("node_idle.txt"))
    assert dict(pairs)["OS"] == "Linux 6.18.44-fc-v1045 #1 SMP PREEMPT_DYNAMIC @0"
    [job] = parse_records(captured("job_running.txt"))
    assert dict(job)["Comment"] == "gpubot-booking=42" and dict(job)["TRES"] == "cpu=1,node=1,billing=1"
    assert [k for k, _ in job].count("Nodes") == 1 and ("JOB_GRES", "gpu:a100:2") in job


def test_the_partition_has_its_max_time() -> None:
    partition = parse_partition(captured("partition.txt"))
    assert (partition.name, partition.state, partition.nodes) == ("gpu", "UP", "gpunode1")
    assert partition.max_time == timedelta(minutes=10)
    assert parse_partition(captured("partition.txt").replace("MaxTime=00:10:00", "MaxTime=UNLIMITED")).max_time \
        is None


def test_a_running_job_shows_its_node_and_gpu_indices() -> None:
    [job] = parse_jobs(captured("job_running.txt"))
    assert (job.job_id, job.name, job.user, job.state, job.reason) == (
        "1", "gpubot-42-ab12cd34", "gpubot-alice", "RUNNING", "None")
    assert (job.partition, job.nodes, job.comment) == ("gpu", "gpunode1", "gpubot-booking=42")
    assert job.gres == (Gres("gpu", "a100", 2, (0, 1)),) and str(job.gres[0]) == "gpu:a100:2(IDX:0-1)"
    assert job.gpu_indices == (0, 1) and job.wanted == "gres:gpu:a100:2"
    assert (job.time_limit, job.start, job.end) == (timedelta(minutes=5), at("21:56:17"), at("22:01:17"))


def test_a_pending_job_has_no_start_until_the_scheduler_placed_it() -> None:
    [fresh] = parse_jobs(captured("job_pending_unplaced.txt"))
    assert (fresh.state, fresh.reason, fresh.start, fresh.end, fresh.nodes) == ("PENDING", "None", None, None, "")
    [placed] = parse_jobs(captured("job_pending.txt"))
    assert (placed.state, placed.reason, placed.nodes, placed.gres) == ("PENDING", "Resources", "", ())
    assert (placed.start, placed.end) == (at("21:59:18"), at("22:01:18"))


def test_a_pending_jobs_start_is_what_squeue_start_estimates() -> None:
    job_id, start, reason = captured("squeue_start.txt").strip().split("|")
    [placed] = parse_jobs(captured("job_pending.txt"))
    assert (placed.job_id, placed.start, placed.reason) == (job_id, parse_time(start), reason)


def test_a_job_squeue_start_has_no_estimate_for_has_no_start() -> None:
    # captured on a full node: squeue --start prints N/A where scontrol prints StartTime=Unknown
    estimates = dict(line.split("|", 1) for line in captured("squeue_start_full.txt").split())
    [behind] = parse_jobs(captured("job_pending_priority.txt"))
    start, reason = estimates[behind.job_id].split("|")
    assert (behind.reason, behind.start, parse_time(start)) == (reason, None, None) == ("Priority", None, None)


def test_every_job_of_the_listing_is_read() -> None:
    jobs = parse_jobs(captured("jobs_all.txt"))
    assert [(j.job_id, j.state, j.gpu_indices) for j in jobs] == [
        ("1", "RUNNING", (0, 1)), ("2", "RUNNING", (4, 5)), ("3", "RUNNING", (6, 7)), ("4", "PENDING", ())]
    assert [j.comment for j in jobs] == ["gpubot-booking=42", "", "", "gpubot-booking=45"]


def test_ended_jobs_keep_their_end_time() -> None:
    [timed_out] = parse_jobs(captured("job_timeout.txt"))
    assert (timed_out.state, timed_out.reason, timed_out.gres) == ("TIMEOUT", "TimeLimit", ())
    assert timed_out.end - timed_out.start == timedelta(seconds=86)
    [cancelled] = parse_jobs(captured("job_cancelled.txt"))
    assert (cancelled.state, cancelled.end) == ("CANCELLED", at("21:56:19"))
    [never_ran] = parse_jobs(captured("job_cancelled_pending.txt"))
    assert (never_ran.state, never_ran.reason, never_ran.nodes) == ("CANCELLED", "Resources", "")


def test_no_jobs_is_an_empty_list() -> None:
    assert parse_jobs("No jobs in the system\n") == []


@pytest.mark.parametrize(("text", "expected"), [
    ("gpu:a100:4,gpu:h100:4", (Gres("gpu", "a100", 4), Gres("gpu", "h100", 4))),
    ("gpu:a100:0(IDX:N/A),gpu:h100:4(IDX:4-7)", (Gres("gpu", "a100", 0), Gres("gpu", "h100", 4, (4, 5, 6, 7)))),
    ("gpu:a100:3(IDX:0,2-3)", (Gres("gpu", "a100", 3, (0, 2, 3)),)),
    ("gpu:2(S:0-1)", (Gres("gpu", "", 2),)),
    ("gres:gpu:a100:2", (Gres("gpu", "a100", 2),)),
    ("gpu:a100:1,mps:1K,shard:8", (Gres("gpu", "a100", 1), Gres("shard", "", 8))),
    ("(null)", ()), ("", ()),
])
def test_gres_lists(text: str, expected: tuple[Gres, ...]) -> None:
    assert parse_gres(text) == expected


def test_an_unreadable_gpu_entry_is_an_error() -> None:
    with pytest.raises(SlurmParseError):
        parse_gres("gpu:a100:two")


@pytest.mark.parametrize(("text", "expected"), [
    ("00:05:00", timedelta(minutes=5)), ("1-00:00:00", timedelta(days=1)), ("2-03", timedelta(days=2, hours=3)),
    ("5:00", timedelta(minutes=5)), ("1:00:00", timedelta(hours=1)), ("90", timedelta(minutes=90)),
    ("UNLIMITED", None), ("INFINITE", None), ("Partition_Limit", None),
])
def test_durations(text: str, expected: timedelta | None) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["soon", "1:2:3:4", "x-01:00:00"])
def test_unreadable_durations(text: str) -> None:
    with pytest.raises(SlurmParseError):
        parse_duration(text)


def test_times_are_utc_or_none() -> None:
    assert parse_time("2026-12-01T21:56:17") == at("21:56:17")
    assert [parse_time(t) for t in ("Unknown", "None", "N/A")] == [None, None, None]
    with pytest.raises(SlurmParseError):
        parse_time("yesterday")


def test_the_job_id_sbatch_printed() -> None:
    assert parse_submitted("42\n") == "42" and parse_submitted("42;lab\n") == "42"
    with pytest.raises(SlurmParseError):
        parse_submitted("Submitted batch job 42\n")


@pytest.mark.parametrize(("capture", "reason"), [
    ("sbatch_too_big.txt", "Requested node configuration is not available"),
    ("test_only_too_big.txt", "Requested node configuration is not available"),
    ("show_job_gone.txt", "slurm_load_jobs error: Invalid job id specified"),
    ("update_job_gone.txt", "Invalid job id specified for job 99999"),
])
def test_the_clusters_own_words_in_an_error(capture: str, reason: str) -> None:
    assert cluster_reason(captured(capture)) == reason
