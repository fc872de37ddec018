"""The holder, Slurm's batch script (providers.startup.slurm_batch_script): valid bash in every shape, the token only
in the line that writes it to its 0600 file. It runs for real on the test cluster in
tests/integration/providers/test_slurm.py."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from gpubot.domain.ports import AgentLaunch, LaunchSpec
from gpubot.providers.startup import slurm_batch_script

AGENT = AgentLaunch("https://bot.example", "https://bot.example/agent/gpubot-agent.py", "b" * 64, "gpa_tok'en")


@pytest.mark.parametrize(("agent", "command"), [(AGENT, "python train.py"), (AGENT, None), (None, "nvidia-smi"),
                                                (None, None)])
def test_every_shape_is_valid_bash_and_holds_until_signalled(agent: AgentLaunch | None, command: str | None) -> None:
    script = slurm_batch_script(LaunchSpec(1, "gpubot-1-a", command, agent=agent))
    checked = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert script.startswith("#!/bin/bash\n") and script.endswith('sleep infinity &\nwait $!\nrm -rf "$GPUBOT_ROOT"\n')
    trap = "trap 'kill $(jobs -p) 2>/dev/null; [ -z \"$GPUBOT_ROOT\" ] || rm -rf \"$GPUBOT_ROOT\"; exit 0' TERM INT HUP"
    assert script.index(trap) < script.index("mktemp -d")  # no moment with a directory and no trap
    assert ('"$d/run" --loop' in script) is (agent is not None)
    assert ('"$d/start-command"' in script) is (command is not None)


def test_the_token_is_written_once_to_a_private_file() -> None:
    script = slurm_batch_script(LaunchSpec(1, "gpubot-1-a", agent=AGENT))
    [line] = [line for line in script.splitlines() if "gpa_tok" in line]
    assert line == "printf '%s\\n' 'gpa_tok'\"'\"'en' > \"$d/token\"; chmod 600 \"$d/token\""
    assert "umask 077" in script and 'mktemp -d "${TMPDIR:-/tmp}/gpubot-job-${SLURM_JOB_ID:-0}.XXXXXX"' in script


def test_a_holder_ends_on_sigterm_with_what_it_started_and_removes_its_directory(tmp_path) -> None:
    script = slurm_batch_script(LaunchSpec(1, "gpubot-1-a", f"echo $$ > {tmp_path}/started; exec sleep 600"))
    holder = subprocess.Popen(["bash", "-c", script], env={"TMPDIR": str(tmp_path), "SLURM_JOB_ID": "7"},
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "started").exists() or not (tmp_path / "started").read_text().strip():
            assert time.monotonic() < deadline, "the start command never ran"
            time.sleep(0.02)
        command = int((tmp_path / "started").read_text())
        [job_dir] = tmp_path.glob("gpubot-job-7.*")
        holder.terminate()
        assert holder.wait(timeout=10) == 0 and not job_dir.exists()
        while _alive(command):
            assert time.monotonic() < deadline, "the start command outlived its holder"
            time.sleep(0.02)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(holder.pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False
