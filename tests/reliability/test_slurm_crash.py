"""SIGKILL `gpubot serve` while its Slurm jobs wait in the cluster's queue and while they run, against a real
slurmctld (tests/slurm_cluster.py), and restart it on the same ledger: reconciliation finds gpubot's jobs by name
and comment and keeps those its bookings hold, cancels a gpubot-named job no booking holds, the pending booking
starts when GPUs free up (its ready DM sent by the restarted bot), and after release no job is left."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable

import pytest
from gpubot.db import bookings as repo
from gpubot.db.database import Database
from gpubot.domain.model import BookingState

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.e2e.server_kit import RunningBot, book, config, dm, start_bot
from tests.reliability.figures import record
from tests.slurm_cluster import TEST_USER, SlurmCluster

ALICE = "UALICE"
CONFIG = config(scheduler={"tick": "1s", "reconcile_every": "2s"},
                acquire={"ready_poll_every": "1s", "ready_poll_max": "1s", "ready_timeout": "10m"},
                providers=None)  # and the cluster's [providers.lab]
STRAY = "gpubot-999-0badf00d"  # a gpubot job name no booking holds (a booking the ledger lost)


def wait_for(check: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def holding(db: Database) -> dict[str, str]:
    """Booking instance id -> name, for every booking that holds a job (booting or active)."""
    with db.session() as session:
        found = repo.list_bookings(session=session, states=[BookingState.BOOTING, BookingState.ACTIVE])
    return {b.instance_id: b.instance_name for b in found if b.instance_id}


def jobs(cluster: SlurmCluster) -> dict[str, str]:
    """Job id -> name of every pending or running job."""
    out = cluster.run("squeue", "-h", "-t", "PD,R", "-o", "%i %j").stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if line.strip())


def kill(bot: RunningBot) -> None:
    bot.process.send_signal(signal.SIGKILL)
    bot.process.wait(20)


def reconciled(bot: RunningBot) -> tuple[int, int]:
    """(kept, orphans) of the restarted bot's start-up reconcile."""
    line = [x for x in bot.log_path.read_text().splitlines() if "start-up reconcile" in x][-1]
    kept, orphans = re.search(r"kept (\d+), adopted \d+, orphans (\d+)", line).groups()
    return int(kept), int(orphans)


@pytest.mark.timeout(600)
def test_kills_while_jobs_wait_and_run_leave_every_job_held_by_a_booking(tmp_path, slurm_cluster) -> None:
    cluster = slurm_cluster
    cluster.cancel_all()
    text = CONFIG + cluster.provider_toml({ALICE: TEST_USER})
    api, db = FakeSlackApi(), Database(f"sqlite:///{tmp_path / 'e2e.db'}")
    bot: RunningBot | None = None
    kept = orphans = 0
    try:
        bot = start_bot(tmp_path, text, api)
        first, second = book(bot, ALICE, "a100x4 5m"), book(bot, ALICE, "h100x4 5m")
        for label in (first, second):
            dm(bot, ALICE, f"{label} is ready", timeout=30)
        third = book(bot, ALICE, "a100x4 5m")
        wait_for(lambda: len(holding(db)) == 3, "the third job to be submitted")
        wait_for(lambda: "Reason=Resources" in cluster.run("scontrol", "-o", "show", "job").stdout, "it to pend")
        cluster.run("sbatch", "--parsable", f"--job-name={STRAY}", "--partition=gpu", "--gres=gpu:h100:1",
                    "--time=5", "--output=/dev/null", "--wrap=sleep 300")

        kill(bot)  # one job pending, two running, one stray
        bot = start_bot(tmp_path, text, api, append_log=True)
        counts = reconciled(bot)
        kept, orphans = kept + counts[0], orphans + counts[1]
        assert counts == (3, 1), counts
        wait_for(lambda: STRAY not in jobs(cluster).values(), "the stray job to be cancelled")
        assert jobs(cluster) == holding(db)

        assert bot.command(f"release {first.lstrip('#')}", user=ALICE).status_code == 200
        dm(bot, ALICE, f"{third} is ready", timeout=30)  # the restarted bot followed the pending job to running

        kill(bot)  # two jobs running
        bot = start_bot(tmp_path, text, api, append_log=True)
        counts = reconciled(bot)
        kept, orphans = kept + counts[0], orphans + counts[1]
        assert counts == (2, 0), counts
        assert jobs(cluster) == holding(db) and len(jobs(cluster)) == 2
        for label in (second, third):
            assert bot.command(f"release {label.lstrip('#')}", user=ALICE).status_code == 200
        wait_for(lambda: not jobs(cluster) and not holding(db), "every job to end")
    finally:
        if bot and bot.process.poll() is None:
            bot.stop()
        api.stop()
        db.dispose()
        cluster.cancel_all()
    record("slurm-crash", f"2 kills of gpubot serve (1 job pending + 2 running + 1 stray, then 2 running): start-up "
                          f"reconciles kept {kept} jobs, cancelled {orphans} stray; jobs left after release 0")
