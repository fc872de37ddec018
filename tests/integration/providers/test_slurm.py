"""The Slurm adapter against a real one-node cluster (tests/slurm_cluster.py: `gpunode1` with gpu:a100:4 and
gpu:h100:4, partition `gpu` with a MaxTime of 10 minutes), its jobs running as the test user.

Jobs start on the scheduler's tick, about a second after submit, so every change of state is polled for with a
deadline. The time-limit test waits 60-90 s (limits are whole minutes, enforced every 30 s): it is marked slow,
and under xdist it occupies one worker while the others go on, each with a cluster of its own."""

from __future__ import annotations

import re
import secrets
import stat
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from gpubot.domain.errors import InvalidRequest, NoAccess, PastTimeLimit
from gpubot.domain.model import Instance, OfferRequest
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.slurm.config import slurm_config
from gpubot.providers.slurm.provider import SlurmProvider

from tests.cli_kit import SLACK_SET, gpubot
from tests.fakes.gpubot_agent_host import AgentHost
from tests.slurm_cluster import MAX_TIME_MINUTES, NODE, TEST_USER, SlurmCluster

ALICE = "U0ALICE001"


def lab_provider(cluster: SlurmCluster) -> SlurmProvider:
    """A fresh adapter over the cluster: nothing carried over from another instance of it."""
    config = slurm_config({"kind": "slurm", "partition": "gpu", "gpu_types": {"a100": "a100", "h100": "h100"},
                           "prices": {"a100": 0.90, "h100": 1.80}, "users": {ALICE: TEST_USER},
                           "slurm_conf": str(cluster.conf), "workdir": str(cluster.scratch)}, "lab")
    return SlurmProvider("lab", config)


@pytest.fixture
def lab(slurm: SlurmCluster) -> SlurmProvider:
    return lab_provider(slurm)


def until(check: Callable[[], object], seconds: float = 20, every: float = 0.1):
    """Poll `check` until it returns something true, and return that; fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, f"not within {seconds:g}s"
        time.sleep(every)
    return found


def book(lab: SlurmProvider, gpu: str, count: int, booking: int, minutes: float = 5, **spec) -> Instance:
    [offer] = lab.offers(OfferRequest(gpu, count))
    return lab.launch(offer, LaunchSpec(booking, f"gpubot-{booking}-{booking:08x}", owner=spec.pop("owner", ALICE),
                                        duration=timedelta(minutes=minutes), **spec))


def running(lab: SlurmProvider, instance: Instance, seconds: float = 20) -> Instance:
    return until(lambda: (found := lab.describe(instance)).ready and found, seconds)


def holds(path: Path, text: str) -> bool:
    """Whether the file holds `text` (another job's file may vanish while we look)."""
    try:
        return path.read_text() == text
    except OSError:
        return False


FREE, QUEUED, NONE = (True, False), (True, True), (False, False)


def availability(lab: SlurmProvider, gpu: str, count: int) -> tuple[bool, bool]:
    """(available, queued): free now, held by the node but busy now (a wait in Slurm's queue), or neither."""
    [offer] = lab.offers(OfferRequest(gpu, count))
    return offer.available, offer.queued


def test_offers_follow_the_free_gpus(lab: SlurmProvider) -> None:
    [offer] = lab.offers(OfferRequest("a100", 4))
    assert (offer.provider, offer.region, offer.available, str(offer.price_per_gpu_hour)) == ("lab", "gpu", True,
                                                                                            "0.9")
    running(lab, book(lab, "a100", 3, 101))
    assert (availability(lab, "a100", 1), availability(lab, "a100", 2), availability(lab, "h100", 4)) == (
        FREE, QUEUED, FREE)


def test_a_drained_node_offers_nothing_free(lab: SlurmProvider, slurm: SlurmCluster) -> None:
    slurm.run("scontrol", "update", f"NodeName={NODE}", "State=DRAIN", "Reason=gpubot test")
    try:
        assert availability(lab, "a100", 1) == NONE
    finally:
        slurm.run("scontrol", "update", f"NodeName={NODE}", "State=RESUME")
    until(lambda: availability(lab, "a100", 1) == FREE)  # NOT_RESPONDING (closed) until slurmd registers again


def test_a_booking_runs_on_the_node_as_its_person_with_its_gpu_indices(lab: SlurmProvider,
                                                                       slurm: SlurmCluster) -> None:
    started = time.monotonic()
    instance = book(lab, "a100", 2, 102)
    ready = running(lab, instance)
    print(f"\nsbatch -> RUNNING and reachable: {time.monotonic() - started:.2f}s")
    assert (ready.status, ready.gpu, ready.count) == ("running", "a100", 2)
    assert ready.ssh == f"ssh {TEST_USER}@{NODE}  # gpu:a100:2(IDX:0-1)"
    assert (ready.extra["node"], ready.extra["gres"], ready.extra["gpu_indices"]) == (
        NODE, "gpu:a100:2(IDX:0-1)", (0, 1))
    assert ready.extra["end"] - ready.extra["start"] == timedelta(minutes=5)
    record = slurm.run("scontrol", "-o", "show", "job", ready.instance_id).stdout
    assert f"UserId={TEST_USER}(" in record and f"JobName=gpubot-102-{102:08x}" in record
    assert "Comment=gpubot-booking=102" in record


def test_the_holder_starts_the_agent_and_the_start_command_and_cleans_up(lab: SlurmProvider,
                                                                         slurm: SlurmCluster) -> None:
    host = AgentHost()
    host.start()
    try:
        marker, secret = slurm.scratch / "started-by", f"gpa_slurm-{secrets.token_hex(8)}"
        instance = book(lab, "h100", 1, 103, agent=host.launch(secret), start_command=f"id -un > {marker}")
        running(lab, instance)
        assert until(lambda: marker.exists() and marker.read_text()) == f"{TEST_USER}\n"
        assert until(lambda: host.downloads())  # the agent was fetched from gpubot, as on a cloud machine
        # job ids repeat across the clusters of parallel workers: the holder's directory is the one with our token
        [token] = until(lambda: [t for t in Path("/tmp").glob(f"gpubot-job-{instance.instance_id}.*/opt/gpubot/token")
                                 if holds(t, f"{secret}\n")])
        job_dir = token.parents[2]
        assert stat.S_IMODE(token.stat().st_mode) == 0o600
        assert token.stat().st_uid == job_dir.stat().st_uid != 0
        lab.terminate(instance)
        until(lambda: not job_dir.exists())  # the holder removes its directory as Slurm ends the job
    finally:
        host.stop()


def test_two_four_gpu_bookings_fit_and_a_third_waits_with_slurms_reason(lab: SlurmProvider) -> None:
    first, second = book(lab, "a100", 4, 104), book(lab, "h100", 4, 105)
    running(lab, first), running(lab, second)
    third = book(lab, "a100", 4, 106)
    waiting = until(lambda: (found := lab.describe(third)).extra["reason"] != "None" and found)
    assert (waiting.status, waiting.ready, waiting.ssh, waiting.extra["reason"]) == ("pending", False, None,
                                                                                     "Resources")
    assert availability(lab, "a100", 4) == QUEUED  # offered with a wait behind the third
    estimate = until(lambda: lab.describe(third).extra["start"])  # what `squeue --start` shows
    assert estimate >= running(lab, first).extra["end"] - timedelta(seconds=1)
    released = time.monotonic()
    lab.terminate(first)
    ready = running(lab, third)
    print(f"\nrelease of the first -> the waiting one RUNNING: {time.monotonic() - released:.2f}s")
    assert ready.extra["gres"] == "gpu:a100:4(IDX:0-3)"


def test_a_shape_no_node_holds_is_refused_in_the_clusters_words(lab: SlurmProvider, slurm: SlurmCluster) -> None:
    before = slurm.job_ids()
    for count in (9, 5):  # more than the node's 8 GPUs; more than its 4 a100 (though 8 GPUs in all)
        with pytest.raises(InvalidRequest, match="Requested node configuration is not available"):
            lab.offers(OfferRequest("a100", count))
    assert slurm.job_ids() == before  # asked with --test-only: nothing was submitted


def test_extending_within_max_time_and_past_it(lab: SlurmProvider) -> None:
    ready = running(lab, book(lab, "h100", 2, 107, minutes=4.5))
    assert ready.extra["time_limit"] == timedelta(minutes=5)  # whole minutes, rounded up
    longer = lab.extend(ready, timedelta(minutes=3))
    assert longer.extra["time_limit"] == timedelta(minutes=8)
    assert longer.extra["end"] - ready.extra["end"] == timedelta(minutes=3)
    with pytest.raises(PastTimeLimit) as refused:
        lab.extend(longer, timedelta(minutes=3))
    assert (refused.value.limit, refused.value.asked) == (timedelta(minutes=MAX_TIME_MINUTES), timedelta(minutes=11))
    assert "MaxTime 00:10:00" in str(refused.value)
    assert lab.describe(longer).extra["time_limit"] == timedelta(minutes=8)


def test_a_booking_longer_than_max_time_is_refused_before_submitting(lab: SlurmProvider,
                                                                     slurm: SlurmCluster) -> None:
    before = slurm.job_ids()
    with pytest.raises(PastTimeLimit):
        book(lab, "a100", 1, 108, minutes=MAX_TIME_MINUTES + 1)
    assert slurm.job_ids() == before


def test_someone_with_no_cluster_user_is_refused(lab: SlurmProvider, slurm: SlurmCluster) -> None:
    before = slurm.job_ids()
    with pytest.raises(NoAccess, match="U0BOB00001 has no user on this cluster"):
        book(lab, "a100", 1, 109, owner="U0BOB00001")
    assert slurm.job_ids() == before


def test_terminate_is_safe_twice_and_an_ended_job_keeps_its_end(lab: SlurmProvider) -> None:
    ready = running(lab, book(lab, "a100", 1, 110))
    started = time.monotonic()
    lab.terminate(ready)
    lab.terminate(ready)
    gone = until(lambda: (found := lab.describe(ready)).status == "terminated" and found)
    print(f"\nscancel -> terminated: {time.monotonic() - started:.2f}s")
    assert gone.extra["state"] in ("CANCELLED", "COMPLETING") and gone.stopped_at == gone.extra["end"]
    assert ready.extra["start"] <= gone.stopped_at
    unknown = Instance("lab", "987654", "gpubot-9-00000009", status="running", ready=True, ssh="ssh x@y")
    assert (lab.describe(unknown).status, lab.terminate(unknown)) == ("terminated", None)


def test_a_job_an_admin_cancels_shows_as_terminated_at_its_end(lab: SlurmProvider, slurm: SlurmCluster) -> None:
    ready = running(lab, book(lab, "h100", 1, 111))
    slurm.run("scancel", ready.instance_id)
    ended = until(lambda: (found := lab.describe(ready)).extra["state"] == "CANCELLED" and found)
    assert (ended.status, ended.ready, ended.ssh, ended.stopped_at) == ("terminated", False, None,
                                                                        ended.extra["end"])


def test_list_owned_finds_gpubot_jobs_by_name_or_comment_after_state_is_lost(lab: SlurmProvider,
                                                                              slurm: SlurmCluster) -> None:
    busy = running(lab, book(lab, "a100", 4, 112))
    queued = book(lab, "a100", 1, 113)
    slurm.run("sbatch", "--parsable", "--job-name=train", "--gres=gpu:h100:1", "--time=5", "--output=/dev/null",
              input="#!/bin/bash\nexec sleep 600\n")  # someone else's job
    renamed = slurm.run("sbatch", "--parsable", "--job-name=renamed-by-hand", "--comment=gpubot-booking=114",
                        "--gres=gpu:h100:1", "--time=5", "--output=/dev/null",
                        input="#!/bin/bash\nexec sleep 600\n").stdout.strip()
    found = {i.instance_id: i for i in lab_provider(slurm).list_owned()}  # a new adapter: as after a crash
    assert set(found) == {busy.instance_id, queued.instance_id, renamed}
    assert found[busy.instance_id].status == "running" and found[queued.instance_id].status == "pending"
    assert found[busy.instance_id].name == busy.name and found[renamed].name == "renamed-by-hand"
    assert [found[i].extra["booking_id"] for i in (busy.instance_id, queued.instance_id, renamed)] == [112, 113, 114]


@pytest.mark.slow
def test_a_time_limit_ends_the_job_and_it_is_terminated_at_its_end(lab: SlurmProvider) -> None:
    ready = running(lab, book(lab, "a100", 1, 115, minutes=0.3))  # the shortest Slurm limit: 1 minute
    assert ready.extra["time_limit"] == timedelta(minutes=1)
    # COMPLETING (the node still tearing the job down) is terminated too; Slurm's final word follows within seconds
    ended = until(lambda: (found := lab.describe(ready)).status == "terminated"
                  and found.extra["state"] != "COMPLETING" and found, seconds=150, every=1)
    assert (ended.extra["state"], ended.extra["reason"]) == ("TIMEOUT", "TimeLimit")
    ran = ended.stopped_at - ended.extra["start"]
    print(f"\n1-minute time limit -> TIMEOUT after {ran.total_seconds():.0f}s")
    assert timedelta(minutes=1) <= ran <= timedelta(seconds=125)
    assert ready.instance_id not in {i.instance_id for i in lab.list_owned()}


def _policy(tmp_path: Path, slurm: SlurmCluster, gpu_types: list[str], users: str) -> str:
    path = tmp_path / "gpubot.toml"
    types = ", ".join(f'{t} = "{t}"' for t in gpu_types)
    prices = ", ".join(f"{t} = 1.0" for t in gpu_types)
    path.write_text(f"""
[providers.lab]
kind = "slurm"
partition = "gpu"
gpu_types = {{ {types} }}
prices = {{ {prices} }}
users = {users}
slurm_conf = "{slurm.conf}"
""")
    return str(path)


def test_check_config_reports_the_cluster_and_what_would_stop_a_booking(tmp_path: Path, slurm: SlurmCluster) -> None:
    before = slurm.job_ids()
    good = gpubot("check-config", "--config", _policy(tmp_path, slurm, ["a100", "h100"],
                                                       f'{{ {ALICE} = "{TEST_USER}" }}'), cwd=tmp_path,
                  env=SLACK_SET)
    assert good.returncode == 0, good.stderr
    assert re.search(r"provider lab \(slurm\): usable — slurm(-wlm)? \d+\.\d+\.\d+, partition gpu: 1 node\(s\), "
                     r"a100=gpu:a100 \(up to 4 a node\), h100=gpu:h100 \(up to 4 a node\), MaxTime 10m\n",
                     good.stdout), good.stdout
    warned = gpubot("check-config", "--config", _policy(tmp_path, slurm, ["a100", "l40s"],
                                                         '{ U0BOB00001 = "nobody-here" }'), cwd=tmp_path,
                    env=SLACK_SET)
    assert warned.returncode == 0, warned.stderr
    assert ("WARNING: l40s=gpu:l40s: no node of the partition has it; users not on this host: nobody-here"
            in warned.stdout), warned.stdout
    none = gpubot("check-config", "--config", _policy(tmp_path, slurm, ["l40s"], "{}"), cwd=tmp_path,
                  env=SLACK_SET)
    assert none.returncode == 1 and "provider lab (slurm): not usable: partition gpu takes none of gpu_types: " \
                                    "l40s=gpu:l40s: no node of the partition has it" in none.stdout, none.stdout
    assert slurm.job_ids() == before  # sbatch --test-only submits nothing
