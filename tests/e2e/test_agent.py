"""The served agent, for real: `gpubot serve` (simulated cloud) serves its agent file; the line of the no-telemetry DM
(sent when nothing arrived by `telemetry_stale_after`) downloads it with curl, checks its SHA-256 and runs it with
python3 on a scratch machine whose stub nvidia-smi reports an idle GPU; its samples arrive, drive an idle reminder
and the release, after which the agent stops by itself; a machine whose stub lists no compute process on its GPUs
gets the no-process reminder instead, and is released after that rule's grace."""

from __future__ import annotations

import hashlib
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from gpubot.db import telemetry as telemetry_repo
from gpubot.scheduling.agent import AGENT_PATH

from gpubot.agent_file import load_agent_file
from tests.e2e.server_kit import agent_line, as_shown, config, dm, free_port, serving, sim
from tests.fakes.machine import Machine
from tests.reliability.figures import record

CONFIG = config(
    idle={"for": "3s", "grace": "3s", "no_process_for": "1s", "no_process_grace": "2s"},
    health={"telemetry_stale_after": "3s"},  # the line that starts the agent by hand comes when nothing arrived by then
    scheduler={"tick": "1s"}, providers={"sim": sim(telemetry=False)})


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> Iterator:
    port = free_port()
    env = {"GPUBOT_PORT": str(port), "GPUBOT_PUBLIC_URL": f"http://127.0.0.1:{port}"}
    with serving(tmp_path_factory.mktemp("agent"), CONFIG, extra_env=env) as running:
        yield running


@pytest.fixture
def machine() -> Iterator[Machine]:
    made = Machine(gpus=[(0, 0.0, 41.0, 512.0, 40960.0), (1, 0.0, 39.0, 512.0, 40960.0)])
    yield made
    made.remove()


def _ready(bot, user: str) -> tuple[int, str]:
    """Book two A100s (the machine's two GPUs: readings beyond a booking's count are refused) as `user`; the
    booking id and the line that runs the agent, from the DM sent when no telemetry arrived."""
    bot.command("book a100x2 1h", user=user)
    ready = as_shown(dm(bot, user, "is ready"))
    assert "sha256sum" not in ready and "is on its way" in ready
    booking_id = int(re.search(r"#(\d+) is ready", ready).group(1))
    return booking_id, agent_line(bot, user, f"#{booking_id}")


def _samples(bot, booking_id: int) -> int:
    with bot.db.session() as session:
        since = datetime.now(UTC) - timedelta(hours=1)
        return len(telemetry_repo.samples_of([booking_id], since, session=session)[booking_id])


def test_the_bot_serves_the_agent_file_it_hashes(bot) -> None:
    served = httpx.get(bot.url + AGENT_PATH)
    agent = load_agent_file()
    assert served.status_code == 200 and served.content == agent.body
    assert served.headers["x-content-sha256"] == agent.sha256 == hashlib.sha256(served.content).hexdigest()
    record("agent delivery", f"served agent file: {len(agent.body)} bytes, SHA-256 {agent.sha256}")


def test_a_line_with_another_hash_never_runs_the_agent(bot, machine: Machine) -> None:
    booking_id, line = _ready(bot, "UBOB")
    tampered = re.sub(r"echo '[0-9a-f]{64}", "echo '" + "0" * 64, line)
    done = subprocess.run(["bash", "-c", tampered], env=machine.env(), cwd=machine.root / "root",
                          capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "FAILED" in done.stdout
    # The line starts the agent in the background before it returns: none running now means none will push.
    assert not [p for p in machine.processes() if "gpubot-agent.py" in p]
    assert not machine.read("root/gpubot-agent.log") and _samples(bot, booking_id) == 0


def test_the_dm_line_runs_the_served_agent_whose_samples_drive_idle_reclaim(bot, machine: Machine) -> None:
    booking_id, line = _ready(bot, "UALICE")
    started = time.monotonic()
    subprocess.run(["bash", "-c", line], env=machine.env(), cwd=machine.root / "root", check=True, timeout=30)
    while _samples(bot, booking_id) == 0 and time.monotonic() < started + 20:
        time.sleep(0.02)
    first = time.monotonic() - started
    assert _samples(bot, booking_id) > 0, machine.read("root/gpubot-agent.log")
    record("agent delivery", f"served agent (push every 1 s): first sample stored {first:.2f} s after the DM line "
                             "started (curl download, sha256sum, python3 start, nvidia-smi, push)")
    assert [p for p in machine.processes() if "gpubot-agent.py" in p and "gpa_" not in p]
    dm(bot, "UALICE", "has been idle")
    dm(bot, "UALICE", "released because its GPUs were idle")
    deadline = time.monotonic() + 15
    while [p for p in machine.processes() if "gpubot-agent.py" in p] and time.monotonic() < deadline:
        time.sleep(0.1)
    agent_log = machine.read("root/gpubot-agent.log")
    assert not [p for p in machine.processes() if "gpubot-agent.py" in p], agent_log
    assert "booking ended" in agent_log and "gpa_" not in agent_log
    assert machine.read("nvidia-smi.calls").startswith("--query-gpu=index,utilization.gpu,temperature.gpu,")


def test_gpus_no_process_holds_get_the_no_process_reminder_then_the_release(bot) -> None:
    made = Machine(gpus=[(0, 0.0, 41.0, 512.0, 40960.0), (1, 0.0, 39.0, 512.0, 40960.0)])
    try:
        made.set_processes([0, 0])
        booking_id, line = _ready(bot, "UCAROL")
        subprocess.run(["bash", "-c", line], env=made.env(), cwd=made.root / "root", check=True, timeout=30)
        reminder = as_shown(dm(bot, "UCAROL", "No program has used"))
        assert f"#{booking_id}" in reminder and "finished" in reminder, reminder
        dm(bot, "UCAROL", "released because its GPUs were idle")
        assert "--query-compute-apps=gpu_uuid,pid,used_memory" in made.read("nvidia-smi.calls")
        with bot.db.session() as session:
            since = datetime.now(UTC) - timedelta(hours=1)
            stored = telemetry_repo.samples_of([booking_id], since, session=session)[booking_id]
        assert stored and {s.processes for s in stored} == {0}
        assert not [t for t in _texts(bot, "UCAROL") if "has been idle" in t]
    finally:
        made.remove()


def _texts(bot, user: str) -> list[str]:
    return [c.args.get("text", "") for c in bot.api.calls_to("chat.postMessage")
            if c.args.get("channel") == user]
