"""SIGKILL `gpubot serve` while a GCP insert operation is still running, restart it on the same ledger, and check
that no VM is left behind: reconciliation finds the VM by its `gpubot-booking` label and name and adopts it (the
booking was acquiring, with its launch intent on record) or terminates it; releasing the booking deletes it."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator

import pytest
from gpubot.db import bookings as repo
from gpubot.db.database import Database
from gpubot.domain.model import BookingState

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.e2e.server_kit import RunningBot, config, start_bot, wait_job_runs
from tests.fakes.gcp_api import FakeGcp
from tests.reliability.figures import record, size

ZONES = ["us-central1-a", "us-central1-b"]
CONFIG = config(budget={"monthly": 100000, "over_budget": "warn"}, scheduler={"tick": "1s", "reconcile_every": "2s"},
                acquire={"poll_every": "1s", "backoff_max": "2s"},
                providers={"gcp": {"kind": "gcp", "project": "gpubot-test", "zones": ZONES}})
# BOOTING too: the follower's first describe comes seconds after the launch, so an adopted VM may still be booting.
IN_FLIGHT = (BookingState.REQUESTED, BookingState.ACQUIRING, BookingState.QUEUED, BookingState.BOOTING,
             BookingState.RELEASING)
TRIALS = size(short=1, full=10)


@pytest.fixture
def fake() -> Iterator[FakeGcp]:
    server = FakeGcp("gpubot-test", ZONES, wait_cap=0.5, op_seconds=2.5, boot_seconds=0.5, delete_seconds=0.3)
    server.start()
    yield server
    server.stop()


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def bookings(db: Database, *states: BookingState) -> list:
    with db.session() as session:
        return repo.list_bookings(session=session, states=states)


def inserts(fake: FakeGcp) -> int:
    return sum(1 for r in fake.requests if r.method == "POST" and r.path.endswith("/instances"))


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL needs POSIX")
@pytest.mark.timeout(600)
def test_a_kill_during_the_insert_leaves_no_vm_behind(tmp_path, fake: FakeGcp) -> None:
    api = FakeSlackApi()
    env = {"GCP_API_URL": fake.url, "GCP_ANONYMOUS_CREDENTIALS": "true"}
    db = Database(f"sqlite:///{tmp_path / 'e2e.db'}")
    bot: RunningBot | None = None
    adopted = 0
    try:
        for trial in range(TRIALS):
            bot = start_bot(tmp_path, CONFIG, api, env, append_log=True)
            before = inserts(fake)
            bot.command("book t4x1 2h --provider gcp", user=f"U{trial}")
            wait_for(lambda before=before: inserts(fake) > before, 30, "the insert")
            time.sleep(0.3 + 0.5 * (trial % 3))  # the operation (2.5 s) is still running
            assert fake.world.clock() < max(op["done_at"] for op in fake.world.operations.values()), "too late"
            bot.process.send_signal(signal.SIGKILL)
            bot.process.wait(10)
            bot = start_bot(tmp_path, CONFIG, api, env, append_log=True)
            adopted += "adopted 1," in _last_reconcile_line(bot)
            wait_for(lambda: not bookings(db, *IN_FLIGHT) and all(
                op["status"] == "DONE" for op in fake.world.operations.values()), 60, "the bookings to settle")
            wait_job_runs(bot, "reconcile", 2)  # a whole reconcile pass after every operation ended
            active = {b.instance_name for b in bookings(db, BookingState.ACTIVE)}
            assert fake.live_names() == active, "every VM belongs to an active booking and vice versa"
            bot.process.send_signal(signal.SIGTERM)
            bot.process.wait(20)
        bot = start_bot(tmp_path, CONFIG, api, env, append_log=True)
        for booking in bookings(db, BookingState.ACTIVE):
            bot.command(f"release {booking.id}", user=booking.owner)
        wait_for(lambda: fake.live_names() == set(), 30, "every VM to be deleted")
    finally:
        if bot and bot.process.poll() is None:
            bot.stop()
        api.stop()
        db.dispose()
    record("gcp-crash", f"trials {TRIALS} (SIGKILL while the insert operation ran); restarts whose reconcile "
                        f"adopted the VM {adopted}; VMs left after release 0")


def _last_reconcile_line(bot: RunningBot) -> str:
    return [line for line in bot.log_path.read_text().splitlines() if "start-up reconcile" in line][-1]
