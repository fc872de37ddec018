"""`gpubot serve` booking on the team's Slurm cluster over signed HTTP, against a real slurmctld
(tests/slurm_cluster.py: `gpunode1` with gpu:a100:4 and gpu:h100:4, partition `gpu`, MaxTime 10 minutes): the job
runs as the person's cluster user under the booked time, the ready DM names the node and the GPUs, extend raises
the job's TimeLimit, release cancels it, and the ledger bills the booking at the internal price.

One bot and one cluster for the module; the tests share the node's GPUs, so each cancels what it leaves behind. A
full node (the job waiting in Slurm's own queue) is tests/e2e/test_slurm_queue.py."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.db import ledger
from gpubot.domain.model import BookingState

from tests.e2e.server_kit import RunningBot, as_shown, book, booking_of, config, dm, serving, until, wait_call
from tests.reliability.figures import record
from tests.slurm_cluster import NODE, TEST_USER, SlurmCluster

ALICE, BOB = "UALICE", "UBOB"

CONFIG = config(scheduler={"tick": "1s"}, idle={"for": "3s", "grace": "3s"},
                acquire={"ready_poll_every": "1s", "ready_poll_max": "1s", "ready_timeout": "10m"},
                providers=None)  # and the cluster's [providers.lab]


@pytest.fixture(scope="module")
def bot(tmp_path_factory, slurm_cluster: SlurmCluster) -> Iterator[RunningBot]:
    lab = slurm_cluster.provider_toml({ALICE: TEST_USER})
    with serving(tmp_path_factory.mktemp("slurm-e2e"), CONFIG + lab) as running:
        yield running


@pytest.fixture
def cluster(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    slurm_cluster.cancel_all()
    yield slurm_cluster
    slurm_cluster.cancel_all()


def job_record(cluster: SlurmCluster, job_id: str) -> str:
    return cluster.run("scontrol", "-o", "show", "job", job_id, check=False).stdout


def test_a_booking_runs_as_its_person_is_extended_and_released_and_billed(bot, cluster) -> None:
    sent = time.monotonic()
    label = book(bot, ALICE, "a100x2 5m")
    ready = as_shown(dm(bot, ALICE, f"{label} is ready", timeout=30))
    to_ready = time.monotonic() - sent
    assert f"Connect with `ssh {TEST_USER}@{NODE}  # gpu:a100:2(IDX:0-1)`" in ready, ready
    made = booking_of(bot, label)
    assert (made.state, made.provider, made.region) == (BookingState.ACTIVE, "lab", "gpu")
    job = job_record(cluster, made.instance_id)
    assert f"UserId={TEST_USER}(" in job and "JobState=RUNNING" in job and "TimeLimit=00:05:00" in job
    assert f"Comment=gpubot-booking={made.id}" in job

    assert bot.command(f"extend {made.id} 2m", user=ALICE).status_code == 200
    until(lambda: "TimeLimit=00:07:00" in job_record(cluster, made.instance_id))
    until(lambda: booking_of(bot, label).duration.total_seconds() == 7 * 60)
    assert bot.command(f"extend {made.id} 5m", user=ALICE).status_code == 200  # 12 min: past MaxTime (10)
    refused = as_shown(wait_call(bot, "response_url", "at most 10m")["text"])
    assert f"lab holds one machine for at most 10m; #{made.id} would need 12m." in refused, refused
    assert "TimeLimit=00:07:00" in job_record(cluster, made.instance_id)
    assert booking_of(bot, label).duration.total_seconds() == 7 * 60

    released = time.monotonic()
    assert bot.command(f"release {made.id}", user=ALICE).status_code == 200
    until(lambda: made.instance_id not in cluster.job_ids("pending,running"))
    to_gone = time.monotonic() - released
    record("slurm e2e", f"/gpu book -> ready DM {to_ready:.2f} s, /gpu release -> job gone {to_gone:.2f} s")
    ended = until(lambda: (b := booking_of(bot, label)).state == BookingState.RELEASED and b)
    with bot.db.session() as session:
        billed = ledger.list_intervals(made.id, session=session)
    assert billed and billed[-1].end is not None and {i.provider for i in billed} == {"lab"}
    assert ended.price_per_gpu_hour is not None and float(ended.price_per_gpu_hour) == 0.9


def push(bot: RunningBot, token: str, util: float) -> int:
    body = {"gpus": [{"index": i, "util": util, "temp_c": 50, "mem_used_mib": 100, "mem_total_mib": 40960}
                     for i in (0, 1)]}
    return httpx.post(f"{bot.url}/api/telemetry", json=body, timeout=5,
                      headers={"Authorization": f"Bearer {token}"}).status_code


def test_the_holders_agent_token_reports_telemetry_and_an_idle_job_is_reminded_then_released(bot, cluster) -> None:
    label = book(bot, ALICE, "a100x2 5m")
    dm(bot, ALICE, f"{label} is ready", timeout=30)
    made = booking_of(bot, label)
    script = cluster.run("scontrol", "write", "batch_script", made.instance_id, "-").stdout
    token = re.search(r"printf '%s\\n' (\S+) > \"\$d/token\"", script).group(1)  # what the holder hands its agent
    assert push(bot, "wrong-token", 2) == 401
    assert push(bot, token, 2) == 204
    deadline, status = time.monotonic() + 30, 204
    while status == 204:  # idle readings until the idle release revokes the token
        assert time.monotonic() < deadline, "the idle job was not released"
        status = push(bot, token, 2)
        time.sleep(0.3)
    assert status == 401
    assert "has been idle" in dm(bot, ALICE, "has been idle")
    assert "released because its GPUs were idle" in dm(bot, ALICE, f"{label} was released because its GPUs were idle")
    until(lambda: made.instance_id not in cluster.job_ids("pending,running"))
    with bot.db.session() as session:
        billed = ledger.list_intervals(made.id, session=session)
    assert billed and billed[-1].end is not None


def test_someone_with_no_cluster_user_is_told_and_nothing_is_submitted(bot, cluster) -> None:
    before = set(cluster.job_ids("all"))
    label = book(bot, BOB, "a100x1 5m")
    wait_call(bot, "chat.update", f"*{label}*", "queued")
    with bot.db.session() as session:
        tried = [(a.provider, a.outcome) for a in attempt_repo.recent_attempts(int(label[1:]), session=session)]
    assert tried and set(tried) == {("lab", "no_access")}, tried
    assert set(cluster.job_ids("all")) <= before  # nothing submitted
    assert bot.command(f"cancel {label.lstrip('#')}", user=BOB).status_code == 200
