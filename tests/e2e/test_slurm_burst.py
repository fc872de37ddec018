"""The burst from a full Slurm cluster to a cloud, over signed HTTP against a real slurmctld: a booking whose job
waits in Slurm's queue past `acquire.burst_after` has the job cancelled, is told why, and lands on the cloud
configured after the cluster (here the simulated one), when that cloud has the GPUs free; when it has none, the job
keeps its place in Slurm's queue and starts there once GPUs free up.

The node (gpu:a100:4, gpu:h100:4) is filled by two bookings; the third is offered by the full cluster with a wait
(a queued offer: the cluster is first in `order`), submitted, and left pending by Slurm. The simulated cloud sells
a100 only."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState

from tests.e2e.server_kit import RunningBot, as_shown, book, config, dm, serving, sim
from tests.reliability.figures import record
from tests.slurm_cluster import TEST_USER, SlurmCluster

ALICE, BOB = "UALICE", "UBOB"
CONFIG = config(scheduler={"tick": "1s"},
                acquire={"strategy": "ordered", "order": ["lab", "sim"], "burst_after": "3s", "ready_poll_every": "1s",
                         "ready_poll_max": "1s", "ready_timeout": "10m"},
                providers={"sim": sim(telemetry=False)})  # and the cluster's [providers.lab]


@pytest.fixture(scope="module")
def bot(tmp_path_factory, slurm_cluster: SlurmCluster) -> Iterator[RunningBot]:
    slurm_cluster.cancel_all()
    lab = slurm_cluster.provider_toml({ALICE: TEST_USER, BOB: TEST_USER})
    with serving(tmp_path_factory.mktemp("slurm-burst"), CONFIG + lab) as running:
        yield running
    slurm_cluster.cancel_all()


@pytest.fixture
def cluster(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    slurm_cluster.cancel_all()
    yield slurm_cluster
    slurm_cluster.cancel_all()


def test_a_job_still_queued_after_burst_after_is_cancelled_and_the_cloud_takes_the_booking(bot, cluster):
    first, second = book(bot, ALICE, "a100x4 5m"), book(bot, ALICE, "h100x4 5m")
    for label in (first, second):
        assert "on lab gpu" in dm(bot, ALICE, f"{label} is ready", timeout=30)
    sent = time.monotonic()
    third = book(bot, ALICE, "a100x4 5m")
    told = as_shown(dm(bot, ALICE, "still had the job in its queue", timeout=30))
    assert f"{third}: lab gpu still had the job in its queue after 3s; it was cancelled" in told, told
    ready = as_shown(dm(bot, ALICE, f"{third} is ready", timeout=30))
    record("slurm e2e", f"burst_after 3 s: the queued job cancelled and the booking ready on the cloud "
                        f"{time.monotonic() - sent:.2f} s after /gpu book")
    assert "on sim sim-1" in ready, ready
    with bot.db.session() as session:
        booking = repo.get_booking(int(third[1:]), session=session)
        attempts = attempt_repo.recent_attempts(booking.id, session=session)
    tried = [(a.provider, a.outcome) for a in attempts]
    assert (booking.state, booking.provider) == (BookingState.ACTIVE, "sim")
    assert tried == [("lab", "launched"), ("lab", "burst"), ("sim", "launched")], tried
    job_name = attempts[1].detail.split()[0]  # "gpubot-3-… after 4 polls"
    [cancelled] = [line for line in cluster.run("scontrol", "-o", "show", "job").stdout.splitlines()
                   if f"JobName={job_name} " in line]
    assert "JobState=CANCELLED" in cancelled


QUEUED_FOR = re.compile(r"waiting in lab gpu's queue \((\w+)\), [^·]*· (?:(\d+)m)?(\d+)s")


def test_with_no_cloud_free_for_it_the_job_keeps_its_place_in_slurms_queue(bot, cluster):
    first, second = book(bot, BOB, "h100x4 5m"), book(bot, BOB, "h100x4 5m")
    dm(bot, BOB, f"{first} is ready", timeout=30)

    def waited() -> float:  # the longest wait in the queue the booking's message has shown
        texts = [c.args.get("text", "") for c in bot.api.calls
                 if c.method == "chat.update" and f"*{second}*" in c.args.get("text", "")]
        return max((int(m[2] or 0) * 60 + int(m[3]) for t in texts if (m := QUEUED_FOR.search(t))), default=0)

    assert bot.api.wait_for(lambda _calls: waited() >= 6, 30), "the queue line past twice burst_after"
    with bot.db.session() as session:
        booking = repo.get_booking(int(second[1:]), session=session)
        tried = [(a.provider, a.outcome) for a in attempt_repo.recent_attempts(booking.id, session=session)]
    assert (booking.state, booking.provider, tried) == (BookingState.BOOTING, "lab", [("lab", "launched")]), tried
    assert booking.instance_id in cluster.job_ids("pending")
    assert bot.command(f"release {first.lstrip('#')}", user=BOB).status_code == 200
    assert "on lab gpu" in dm(bot, BOB, f"{second} is ready", timeout=30)
