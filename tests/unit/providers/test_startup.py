"""providers.startup, read as text: each platform's shape, the hash and token written in, quoting, YAML.

Running these commands for real is in tests/integration/providers/test_startup_machines.py.
"""

from __future__ import annotations

import base64
import re
import shlex

import pytest
import yaml
from gpubot.domain.ports import AgentLaunch, LaunchSpec
from gpubot.providers.startup import (
    UNIT_NAME,
    cloud_init_user_data,
    container_command,
    launcher_script,
    runpod_start,
    start_command_script,
    vm_startup_script,
)

SHA = "0123456789abcdef" * 4
NASTY_TOKEN = "gpa_it's \"$HOME\" `id` \\ ;&|"
NASTY_COMMAND = "python serve.py --name 'my model' --out \"$HOME/out dir\" `date +%s` && echo $((1+1)) \\\n  | tee log"
AGENT = AgentLaunch("https://bot.example.com/", "https://bot.example.com/agent/gpubot-agent.py", SHA, NASTY_TOKEN,
                    2.5)


def spec(command: str | None = NASTY_COMMAND, agent: AgentLaunch | None = AGENT, **extra) -> LaunchSpec:
    return LaunchSpec(7, "gpubot-7-ab", command, agent=agent, **extra)


def heredoc(script: str, path: str) -> str:
    """The text a `cat > "path" <<'DELIM'` here-document in `script` writes."""
    match = re.search(rf'cat > "{re.escape(path)}" <<\'(\w+)\'\n(.*?)\n\1\n', script, re.S)
    assert match, f"no here-document for {path}"
    return match.group(2) + "\n"


def token_written(script: str) -> str:
    [line] = [line for line in script.splitlines() if line.startswith("printf '%s\\n' ") and '"$d/token"' in line]
    return shlex.split(line)[2]


# -- the pieces ---------------------------------------------------------------------------------------------
def test_the_launcher_carries_the_urls_hash_and_interval_and_never_the_token() -> None:
    text = launcher_script(AGENT)
    assert f"sum={SHA}\n" in text and "interval=2.5\n" in text
    assert "bot=https://bot.example.com\n" in text and "url=https://bot.example.com/agent/gpubot-agent.py\n" in text
    assert "gpa_it" not in text and "--token-file" in text and "pip" not in text and "gpubot[" not in text


def test_a_malformed_hash_is_refused() -> None:
    with pytest.raises(ValueError, match="64 lowercase hex"):
        launcher_script(AgentLaunch("https://b", "https://b/a.py", "abc", "gpa_x"))


def test_the_start_command_becomes_a_bash_script_unless_it_has_its_own_interpreter() -> None:
    assert start_command_script("python train.py") == "#!/bin/bash\npython train.py\n"
    assert start_command_script("#!/usr/bin/env python3\nprint(1)\n") == "#!/usr/bin/env python3\nprint(1)\n"
    assert start_command_script("  ") is None and start_command_script(None) is None


def test_the_old_agent_placeholder_becomes_a_no_op() -> None:
    assert start_command_script("{agent} && python serve.py") == "#!/bin/bash\n: && python serve.py\n"


def test_the_agent_repr_hides_the_token() -> None:
    assert "gpa_it" not in repr(spec()) and "token=***" in repr(AGENT)


# -- AutoDL --------------------------------------------------------------------------------------------------
def test_autodl_cmd_ends_blocking_for_the_containers_life() -> None:
    cmd = container_command(spec())
    lines = cmd.splitlines()
    assert lines[-1] == "exec sleep infinity"
    assert 'nohup "$d/run" --loop >>"$d/agent.log" 2>&1 </dev/null &' in lines
    assert '"$d/start-command" </dev/null &' in lines
    assert lines.index('nohup "$d/run" --loop >>"$d/agent.log" 2>&1 </dev/null &') < len(lines) - 1


def test_autodl_cmd_writes_the_token_the_launcher_and_the_command_exactly() -> None:
    cmd = container_command(spec())
    assert token_written(cmd) == NASTY_TOKEN
    assert heredoc(cmd, "$d/run") == launcher_script(AGENT)
    assert heredoc(cmd, "$d/start-command") == f"#!/bin/bash\n{NASTY_COMMAND}\n"


def test_autodl_cmd_without_agent_or_command_still_blocks() -> None:
    assert container_command(spec(None, None)).splitlines()[-1] == "exec sleep infinity"
    assert "$d" not in container_command(spec(None, None))


def test_a_command_containing_the_delimiter_gets_another_one() -> None:
    cmd = container_command(spec("cat <<GPUBOT_EOF\nhello\nGPUBOT_EOF", None))
    assert heredoc(cmd, "$d/start-command") == "#!/bin/bash\ncat <<GPUBOT_EOF\nhello\nGPUBOT_EOF\n"


# -- RunPod --------------------------------------------------------------------------------------------------
def test_runpod_args_run_our_setup_then_the_images_start_sh() -> None:
    args, env = runpod_start(spec())
    argv = shlex.split(args)
    assert argv[:2] == ["bash", "-c"] and len(argv) == 3
    assert argv[2].endswith("if [ -x /start.sh ]; then exec /start.sh; fi; exec sleep infinity")
    assert "'" not in argv[2], "one level of quoting, whatever the vendor's splitter"
    assert env == {"GPUBOT_AGENT_TOKEN": NASTY_TOKEN, "GPUBOT_AGENT_RUN": launcher_script(AGENT),
                   "GPUBOT_START_COMMAND": f"#!/bin/bash\n{NASTY_COMMAND}\n"}


def test_runpod_args_are_the_same_for_every_pod_and_unset_the_token_before_anything_starts() -> None:
    args, _env = runpod_start(spec())
    assert runpod_start(spec("other", AgentLaunch("https://x", "https://x/a", "f" * 64, "gpa_other")))[0] == args
    script = shlex.split(args)[2]
    assert script.index("unset GPUBOT_AGENT_TOKEN") < script.index('nohup "$d/run"') < script.index("/start.sh")


def test_runpod_without_agent_or_command_keeps_the_images_own_start() -> None:
    assert runpod_start(spec(None, None)) == (None, {})
    args, env = runpod_start(spec("python serve.py", None))
    assert "exec /start.sh" in args and env == {"GPUBOT_START_COMMAND": "#!/bin/bash\npython serve.py\n"}


# -- VMs -----------------------------------------------------------------------------------------------------
def test_the_vm_script_installs_a_restarting_unit_and_runs_the_command_once() -> None:
    script = vm_startup_script(spec())
    assert script.startswith("#!/bin/bash\n") and token_written(script) == NASTY_TOKEN
    unit = re.search(r"<<GPUBOT_EOF\n(\[Unit\].*?)\nGPUBOT_EOF\n", script, re.S).group(1)
    assert "ExecStart=$d/run" in unit and "Restart=on-failure" in unit and "WantedBy=multi-user.target" in unit
    assert f"systemctl daemon-reload && systemctl enable --now {UNIT_NAME}" in script
    once = script[script.index('if [ ! -e "$d/start-command.started" ]'):]
    assert heredoc(once, "$d/start-command") == f"#!/bin/bash\n{NASTY_COMMAND}\n"
    assert 'nohup "$d/start-command" >>"$d/start-command.log" 2>&1 </dev/null &' in once


def test_the_vm_script_is_none_when_there_is_nothing_to_do() -> None:
    assert vm_startup_script(spec(None, None)) is None
    assert "systemctl" not in vm_startup_script(spec("python serve.py", None))


def test_cloud_init_user_data_is_a_valid_cloud_config_running_the_vm_script() -> None:
    text = cloud_init_user_data(spec(ssh_public_key="ssh-ed25519 AAAA it's me"))
    assert text.startswith("#cloud-config\n")
    document = yaml.safe_load(text)
    [entry] = document["write_files"]
    assert (entry["path"], entry["permissions"], entry["encoding"]) == ("/var/lib/gpubot/startup.sh", "0700", "b64")
    assert base64.b64decode(entry["content"]).decode() == vm_startup_script(spec())
    assert document["runcmd"] == [["bash", "/var/lib/gpubot/startup.sh"]]
    assert document["ssh_authorized_keys"] == ["ssh-ed25519 AAAA it's me"]


def test_cloud_init_user_data_only_when_needed() -> None:
    assert cloud_init_user_data(spec(None, None)) is None
    assert yaml.safe_load(cloud_init_user_data(spec(None, None, ssh_public_key="ssh-ed25519 K"))) == {
        "ssh_authorized_keys": ["ssh-ed25519 K"]}
