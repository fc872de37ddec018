"""The start commands of providers.startup run for real on a scratch machine (tests/fakes/machine.py), against
gpubot's agent routes on 127.0.0.1: files written exactly, the agent started and pushing, quoting intact."""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.startup import cloud_init_user_data, container_command, runpod_start, vm_startup_script

from tests.fakes.cloud_init import run_user_data
from tests.fakes.gpubot_agent_host import AgentHost
from tests.fakes.machine import Machine

TOKEN = "gpa_it's \"$HOME\" `id` \\ ;&|"
# The command prints its arguments one per line: quoting survives only if they arrive exactly as written.
COMMAND = "printf '%s\\n' 'my model' \"$HOME/out dir\" '`not run`' '$NOT_EXPANDED' > \"$HOME/args.txt\""


@pytest.fixture(scope="module")
def host() -> Iterator[AgentHost]:
    server = AgentHost()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def machine() -> Iterator[Machine]:
    made = Machine()
    yield made
    made.remove()


def wait_until(check: Callable[[], object], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return bool(check())


def expected_args(machine: Machine) -> str:
    return f"my model\n{machine.root}/root/out dir\n`not run`\n$NOT_EXPANDED\n"


@pytest.mark.parametrize("shape", ["container", "runpod", "vm"])
def test_every_script_is_valid_shell(shape: str, host: AgentHost) -> None:
    spec = LaunchSpec(1, "gpubot-1-a", COMMAND, agent=host.launch(TOKEN))
    text = {"container": lambda: container_command(spec), "vm": lambda: vm_startup_script(spec),
            "runpod": lambda: shlex.split(runpod_start(spec)[0])[2]}[shape]()
    for shell in ("bash", "sh"):
        checked = subprocess.run([shell, "-n"], input=text, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr


def test_container_command_runs_agent_and_command_and_keeps_running(host: AgentHost, machine: Machine) -> None:
    agent = host.launch(TOKEN)
    machine.run(["bash", "-c", container_command(LaunchSpec(1, "gpubot-1-a", COMMAND, agent=agent))])
    assert wait_until(lambda: host.pushes_of(TOKEN)), machine.read("opt/gpubot/agent.log")
    assert wait_until(lambda: machine.read("root/args.txt")) and machine.read("root/args.txt") == expected_args(
        machine)
    assert machine.read("opt/gpubot/token") == TOKEN + "\n"
    assert oct((machine.root / "opt/gpubot/token").stat().st_mode & 0o777) == "0o600"
    assert oct((machine.root / "opt/gpubot").stat().st_mode & 0o777) == "0o700"
    assert host.pushes_of(TOKEN)[0].body == {"gpus": [{"index": 0, "util": 0.0, "temp_c": 35.0,
                                                       "mem_used_mib": 100.0, "mem_total_mib": 40960.0}]}
    assert machine.alive()


def test_runpod_args_start_the_agent_then_hand_over_to_start_sh(host: AgentHost, machine: Machine) -> None:
    args, env = runpod_start(LaunchSpec(1, "gpubot-1-a", COMMAND, agent=host.launch(TOKEN)))
    machine.run([part.replace("/start.sh", str(machine.root / "start.sh")) for part in shlex.split(args)], env)
    assert wait_until(lambda: (machine.root / "sshd.started").exists())
    assert wait_until(lambda: host.pushes_of(TOKEN)), machine.read("opt/gpubot/agent.log")
    assert wait_until(lambda: machine.read("root/args.txt") == expected_args(machine))
    assert machine.read("opt/gpubot/token") == TOKEN + "\n" and machine.alive()
    environ = Path(f"/proc/{machine.process.pid}/environ").read_bytes()  # now /start.sh's stand-in
    assert b"GPUBOT_AGENT_TOKEN" not in environ


def test_vm_script_installs_the_unit_starts_it_and_runs_the_command_once(host: AgentHost,
                                                                          machine: Machine) -> None:
    script = machine.root / "startup.sh"
    script.write_text(vm_startup_script(LaunchSpec(1, "gpubot-1-a", COMMAND, agent=host.launch(TOKEN))))
    assert machine.run(["bash", str(script)]).wait(10) == 0
    unit = machine.read("etc/systemd/system/gpubot-agent.service")
    assert f"ExecStart={machine.root}/opt/gpubot/run" in unit and "Restart=on-failure" in unit
    assert machine.read("systemctl.log") == "daemon-reload\nenable --now gpubot-agent.service\n"
    assert wait_until(lambda: host.pushes_of(TOKEN)), machine.read("gpubot-agent.service.log")
    assert wait_until(lambda: machine.read("root/args.txt") == expected_args(machine))
    (machine.root / "root/args.txt").unlink()
    assert machine.run(["bash", str(script)]).wait(10) == 0  # GCP runs its startup-script at every boot
    # A start command it started would have been forked before it exited: running now, or done and written.
    assert not [p for p in machine.processes() if "start-command" in p]
    assert not (machine.root / "root/args.txt").exists(), "the start command runs once per machine"


def test_without_systemd_the_vm_script_runs_the_agent_itself(host: AgentHost, machine: Machine) -> None:
    machine.without("systemctl")
    script = machine.root / "startup.sh"
    script.write_text(vm_startup_script(LaunchSpec(1, "gpubot-1-a", None, agent=host.launch("gpa_nosystemd"))))
    assert machine.run(["bash", str(script)]).wait(10) == 0
    assert wait_until(lambda: host.pushes_of("gpa_nosystemd")), machine.read("opt/gpubot/agent.log")


def test_cloud_init_user_data_does_the_same(host: AgentHost, machine: Machine) -> None:
    spec = LaunchSpec(1, "gpubot-1-a", COMMAND, agent=host.launch("gpa_cloudinit"), ssh_public_key="ssh-ed25519 K")
    assert run_user_data(machine, cloud_init_user_data(spec)).wait(10) == 0
    assert machine.read("var/lib/gpubot/startup.sh") == vm_startup_script(spec)
    assert machine.read("root/.ssh/authorized_keys") == "ssh-ed25519 K\n"
    assert wait_until(lambda: host.pushes_of("gpa_cloudinit"))
    assert wait_until(lambda: machine.read("root/args.txt") == expected_args(machine))
