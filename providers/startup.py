"""What a rented machine runs at boot, in the shape each platform runs it: gpubot's telemetry agent (fetched
from the bot, checked against the SHA-256 the bot wrote here, run with a restart policy) and the user's own
`start_command`. Pure string building; each adapter calls the function for its platform.

Rules every shape keeps:
- The agent comes from the bot (`AgentLaunch.download_url`) and runs only if its SHA-256 is the one gpubot
  wrote into the command; nothing is installed by a package name. It lives in /opt/gpubot (or ~/.gpubot when
  /opt is not writable), next to `run`, the launcher that fetches, checks and starts it.
- Nothing stops the machine the user pays for: a failed download, a wrong hash, no GPU driver or a crashing
  agent are logged and retried (10 s, doubling up to 10 min; systemd every 30 s), never fatal.
- The token goes to a 0600 file the agent reads (`--token-file`); it is never on the agent's command line.
- The user's `start_command` is written to /opt/gpubot/start-command and runs as its own script (bash, unless
  it starts with `#!`), beside the agent, never before it. `{agent}` (which older policies used to place the
  agent command) becomes `:`, a no-op: the agent runs in any case.
- Every path written is under `${GPUBOT_ROOT-}`, unset on a real machine (so /opt/gpubot); the faithful fakes
  point it at a scratch directory.

Per platform:
- `container_command(spec)` — AutoDL's `cmd`: an AutoDL container lives exactly as long as its command, so the
  agent and the start command go to the background and the command ends with `exec sleep infinity`.
- `runpod_start(spec)` — RunPod's `args` (which replaces the image's own start command, `/start.sh`, the one that
  starts sshd) and `env`: `bash -c '…setup…; exec /start.sh'`, the token passed in the environment.
- `vm_startup_script(spec)` — a bash script for VMs: installs `gpubot-agent.service` (Restart=on-failure) and
  runs the start command once. GCP passes it as `metadata.startup-script`.
- `cloud_init_user_data(spec)` — the same script as `#cloud-config` user data (Lambda, AWS), plus the SSH key.
- `slurm_batch_script(spec)` — a Slurm job's batch script, the holder: it runs as the booking's person on a shared
  node, so everything lives in a directory of the job's own (`GPUBOT_ROOT` made under `$TMPDIR`, 0700, removed
  when the job ends), and it waits until Slurm ends the job (release or time limit): the job holds the GPUs.
"""

from __future__ import annotations

import base64
import re
import shlex

from gpubot.domain.ports import AgentLaunch, LaunchSpec

__all__ = ["AGENT_DIR", "UNIT_NAME", "cloud_init_user_data", "container_command", "launcher_script",
           "runpod_start", "slurm_batch_script", "start_command_script", "vm_startup_script"]

AGENT_DIR = "/opt/gpubot"
UNIT_NAME = "gpubot-agent.service"
TOKEN_ENV = "GPUBOT_AGENT_TOKEN"
START_SH = "/start.sh"
STARTUP_SCRIPT = "/var/lib/gpubot/startup.sh"
_SHA256 = re.compile(r"[0-9a-f]{64}")

# The agent's launcher (POSIX sh). `run` fetches the agent unless the copy here has the right hash, then execs
# it (systemd restarts it); `run --loop` restarts it itself, until it exits 0 (the booking ended).
_LAUNCHER = r"""#!/bin/sh
# gpubot telemetry agent launcher, written by this machine's start command. It downloads the agent from gpubot
# unless the copy here has the SHA-256 below, and runs it. `run --loop` restarts it after a failure (after
# 10 s, doubling up to 10 min) and ends when the agent exits 0: gpubot no longer accepts the token.
bot=@BOT@
url=@URL@
sum=@SUM@
interval=@INTERVAL@
d=$(cd "$(dirname "$0")" && pwd) || exit 70
fetch() {
  python3 - "$url" "$sum" "$d/agent.py" <<'PY'
import hashlib, os, sys, urllib.request
url, want, path = sys.argv[1:4]
def sha256(data): return hashlib.sha256(data).hexdigest()
try:
    with open(path, "rb") as f:
        if sha256(f.read()) == want: sys.exit(0)
except OSError: pass
try:
    data = urllib.request.urlopen(url, timeout=60).read()
except Exception as exc:
    sys.exit("gpubot-agent: could not download %s: %s" % (url, exc))
if sha256(data) != want:
    sys.exit("gpubot-agent: %s has SHA-256 %s, not %s as gpubot wrote: not running it" % (url, sha256(data), want))
with open(path + ".part", "wb") as f: f.write(data)
os.replace(path + ".part", path)
PY
}
agent() { python3 "$d/agent.py" --url "$bot" --token-file "$d/token" --interval "$interval"; }
if [ "${1-}" = --loop ]; then
  wait=10
  while :; do
    fetch && agent
    rc=$?
    [ "$rc" -eq 0 ] && exit 0
    echo "gpubot-agent: not running (exit $rc); trying again in ${wait}s" >&2
    sleep "$wait"
    wait=$((wait * 2)); [ "$wait" -gt 600 ] && wait=600
  done
fi
fetch || exit 75
exec python3 "$d/agent.py" --url "$bot" --token-file "$d/token" --interval "$interval"
"""

_UNIT = """[Unit]
Description=gpubot GPU telemetry agent
Wants=network-online.target
After=network-online.target
StartLimitIntervalSec=0

[Service]
ExecStart=@RUN@
Restart=on-failure
RestartSec=30
NoNewPrivileges=yes
PrivateTmp=yes
ProtectHome=yes
ProtectSystem=full

[Install]
WantedBy=multi-user.target
"""


# -- the pieces --------------------------------------------------------------------------------------------
def launcher_script(agent: AgentLaunch) -> str:
    """The text of `run`, the agent's launcher, with the bot's URLs and the agent's hash written in."""
    if not _SHA256.fullmatch(agent.sha256):
        raise ValueError("AgentLaunch.sha256 must be 64 lowercase hex digits")
    values = {"@BOT@": agent.bot_url.rstrip("/"), "@URL@": agent.download_url, "@SUM@": agent.sha256,
              "@INTERVAL@": f"{agent.interval:g}"}
    text = _LAUNCHER
    for marker, value in values.items():
        text = text.replace(marker, shlex.quote(value))
    return text


def start_command_script(command: str | None) -> str | None:
    """The user's start command as a script file's text (bash unless it has its own `#!`), or None."""
    if command is None or not command.strip():
        return None
    command = command.replace("{agent}", ":")
    body = command if command.startswith("#!") else f"#!/bin/bash\n{command}"
    return body if body.endswith("\n") else body + "\n"


def _heredoc(path: str, text: str, mode: str) -> list[str]:
    """Lines that write `text` to `path` verbatim (a quoted here-document) and set its mode."""
    delimiter, lines = "GPUBOT_EOF", text.rstrip("\n").split("\n")
    while delimiter in lines:
        delimiter += "_"
    return [f"cat > \"{path}\" <<'{delimiter}'", *lines, delimiter, f'chmod {mode} "{path}"']


def _agent_dir(fallback: bool) -> list[str]:
    if fallback:  # a container may run as a user who cannot write /opt
        return [f'd="${{GPUBOT_ROOT-}}{AGENT_DIR}"; mkdir -p "$d" 2>/dev/null || d="${{HOME:-/root}}/.gpubot"',
                'mkdir -p "$d"; chmod 700 "$d"']
    return [f'd="${{GPUBOT_ROOT-}}{AGENT_DIR}"; mkdir -p "$d"; chmod 700 "$d"']


def _install_agent(agent: AgentLaunch) -> list[str]:
    """Write the token (0600) and the launcher into "$d"."""
    return [f"printf '%s\\n' {shlex.quote(agent.token)} > \"$d/token\"; chmod 600 \"$d/token\"",
            *_heredoc("$d/run", launcher_script(agent), "700")]


def _user_command(spec: LaunchSpec, run: str) -> list[str]:
    """Write the user's start command to "$d/start-command" and start it with `run`."""
    script = start_command_script(spec.start_command)
    return [*_heredoc("$d/start-command", script, "700"), run] if script else []


# -- containers --------------------------------------------------------------------------------------------
def container_command(spec: LaunchSpec) -> str:
    """AutoDL's `cmd`: agent and start command in the background; the last line blocks for the container's life."""
    steps = ["# gpubot: the telemetry agent and the start command run in the background; the last line keeps",
             "# the container alive, since it lives exactly as long as this command."]
    if spec.agent or start_command_script(spec.start_command):
        steps += _agent_dir(fallback=True)
    if spec.agent:
        steps += [*_install_agent(spec.agent), _LOOP]
    steps += _user_command(spec, '"$d/start-command" </dev/null &')
    return "\n".join([*steps, "exec sleep infinity"]) + "\n"


def runpod_start(spec: LaunchSpec) -> tuple[str | None, dict[str, str]]:
    """RunPod's `args` and extra `env`: our setup, then `exec /start.sh` (the image's own start command, which
    starts sshd). The token, the launcher and the start command travel in `env`, so `args` is the same short
    line for every pod, without nested quotes. (None, {}) when there is nothing to add."""
    env = {}
    if spec.agent:
        env.update({TOKEN_ENV: spec.agent.token, "GPUBOT_AGENT_RUN": launcher_script(spec.agent)})
    script = start_command_script(spec.start_command)
    if script:
        env["GPUBOT_START_COMMAND"] = script
    return (_RUNPOD_ARGS, env) if env else (None, {})


_LOOP = 'nohup "$d/run" --loop >>"$d/agent.log" 2>&1 </dev/null &'
_RUNPOD_ARGS = "bash -c '" + " ".join([
    *(f"{line};" for line in _agent_dir(fallback=True)),
    'r=; if [ -n "${GPUBOT_AGENT_RUN-}" ]; then r=1; printf "%s\\n" "$GPUBOT_AGENT_TOKEN" > "$d/token";',
    'chmod 600 "$d/token"; printf "%s" "$GPUBOT_AGENT_RUN" > "$d/run"; chmod 700 "$d/run"; fi;',
    's=; if [ -n "${GPUBOT_START_COMMAND-}" ]; then s=1; printf "%s" "$GPUBOT_START_COMMAND" > "$d/start-command";',
    'chmod 700 "$d/start-command"; fi;',
    "unset GPUBOT_AGENT_TOKEN GPUBOT_AGENT_RUN GPUBOT_START_COMMAND;",
    f'if [ -n "$r" ]; then {_LOOP} fi;',
    'if [ -n "$s" ]; then "$d/start-command" </dev/null & fi;',
    f"if [ -x {START_SH} ]; then exec {START_SH}; fi; exec sleep infinity"]) + "'"


# -- Slurm jobs --------------------------------------------------------------------------------------------
_HOLDER_HEAD = [
    "#!/bin/bash",
    "# gpubot holder: holds this job's GPUs until Slurm ends the job (a release runs scancel; else the time limit).",
    "# The telemetry agent and the start command run beside it, from a directory of this job's own.",
    "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",  # sbatch --export=NONE: no PATH
    'export HOME="${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"',
    "umask 077",
    "# the trap first: a job cancelled as it starts must not leave its directory behind",
    "GPUBOT_ROOT=",
    "trap 'kill $(jobs -p) 2>/dev/null; [ -z \"$GPUBOT_ROOT\" ] || rm -rf \"$GPUBOT_ROOT\"; exit 0' TERM INT HUP",
    'GPUBOT_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/gpubot-job-${SLURM_JOB_ID:-0}.XXXXXX") || exit 73',
    "export GPUBOT_ROOT",
]


def slurm_batch_script(spec: LaunchSpec) -> str:
    """A Slurm batch script that starts the agent and the start command in the background, then waits for the job
    to be ended (SIGTERM from scancel or the time limit), removing its directory on the way out."""
    steps = list(_HOLDER_HEAD)
    if spec.agent or start_command_script(spec.start_command):
        steps += _agent_dir(fallback=False)
    if spec.agent:
        steps += [*_install_agent(spec.agent), _LOOP]
    steps += _user_command(spec, '"$d/start-command" </dev/null >>"$d/start-command.log" 2>&1 &')
    steps += ["sleep infinity &", "wait $!", 'rm -rf "$GPUBOT_ROOT"']
    return "\n".join(steps) + "\n"


# -- virtual machines --------------------------------------------------------------------------------------
def vm_startup_script(spec: LaunchSpec) -> str | None:
    """A bash script that installs the agent as gpubot-agent.service and runs the start command once per
    machine (GCP runs its startup-script at every boot); None when there is nothing to do."""
    if not spec.agent and not start_command_script(spec.start_command):
        return None
    steps = ["#!/bin/bash", "# gpubot: install the GPU telemetry agent as a systemd service, then run the start",
             "# command once. A failure here is logged, never fatal: the machine stays up.", *_agent_dir(False)]
    if spec.agent:
        steps += [*_install_agent(spec.agent), *_systemd_unit()]
    steps += _once(_user_command(spec, 'nohup "$d/start-command" >>"$d/start-command.log" 2>&1 </dev/null &'))
    return "\n".join(steps) + "\n"


def _systemd_unit() -> list[str]:
    unit_dir = "${GPUBOT_ROOT-}/etc/systemd/system"
    unit = _UNIT.replace("ExecStart=@RUN@", "ExecStart=$d/run")  # an unquoted here-document expands $d
    return [f'mkdir -p "{unit_dir}"', f'cat > "{unit_dir}/{UNIT_NAME}" <<GPUBOT_EOF', *unit.rstrip("\n").split("\n"),
            "GPUBOT_EOF",
            f"if systemctl daemon-reload && systemctl enable --now {UNIT_NAME}; then :; else",
            f'  echo "gpubot: could not start {UNIT_NAME}; running the agent without systemd" >&2',
            f"  {_LOOP}",
            "fi"]


def _once(steps: list[str]) -> list[str]:
    if not steps:
        return []
    return ['if [ ! -e "$d/start-command.started" ]; then', '  touch "$d/start-command.started"', *steps, "fi"]


def cloud_init_user_data(spec: LaunchSpec) -> str | None:
    """`#cloud-config` user data (Lambda, AWS): the VM script written to /var/lib/gpubot/startup.sh and run once
    by cloud-init, and the SSH key for the default user; None when there is nothing to do."""
    script = vm_startup_script(spec)
    if script is None and not spec.ssh_public_key:
        return None
    lines = ["#cloud-config", "# gpubot: install the GPU telemetry agent and run the start command "
             f"({STARTUP_SCRIPT})."]
    if spec.ssh_public_key:
        lines += ["ssh_authorized_keys:", f"  - {_yaml_string(spec.ssh_public_key)}"]
    if script is not None:
        encoded = base64.b64encode(script.encode()).decode()
        lines += ["write_files:", f"  - path: {STARTUP_SCRIPT}", "    permissions: '0700'", "    encoding: b64",
                  f"    content: {encoded}", "runcmd:", f"  - [bash, {STARTUP_SCRIPT}]"]
    return "\n".join(lines) + "\n"


def _yaml_string(value: str) -> str:
    """A YAML single-quoted scalar (the only escape is '' for ')."""
    return "'" + value.replace("'", "''").replace("\n", " ") + "'"
