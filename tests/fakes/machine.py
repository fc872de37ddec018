"""A rented machine for the faithful fakes: its boot command runs for real, in a scratch root, with stubs.

`Machine(root)` lays out:
- `bin/`, the whole PATH: links to the host tools a GPU image has (sh, bash, coreutils, curl, python3 → this
  interpreter) and stubs the tests steer —
  `nvidia-smi` prints `gpus.csv` (index, util %, temp °C, MiB used, MiB total; `set_gpus`) and, asked for compute
  processes, `uuids.csv` and `apps.csv` (`set_processes`; without them that query fails), or fails like a
  machine without a driver (`no_driver`), or is missing (`without("nvidia-smi")`);
  `systemctl` logs its arguments to `systemctl.log`, and `start`/`enable --now` of a unit runs the unit's
  ExecStart in the background, as systemd would (Restart= is not modelled);
- `start.sh`, the stand-in for a RunPod image's `/start.sh`: it marks `sshd.started` (sshd is up) and sleeps.
  The RunPod fake maps the path `/start.sh` in a pod's command to it: a command that never runs `/start.sh`
  never starts sshd;
- `root/`, the HOME of the machine's user.
Commands run in their own session with GPUBOT_ROOT=<root> (the start commands write /opt/gpubot… below it),
HOME, a PATH of `bin/` only, and no proxy settings, so an agent reaches a bot on 127.0.0.1. `stop()` kills
every process of the machine; machines still running when the interpreter exits are killed then.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import weakref
from pathlib import Path

__all__ = ["DEFAULT_GPUS", "Machine"]

DEFAULT_GPUS = [(0, 0.0, 35.0, 100.0, 40960.0)]  # one idle, cool GPU
TOOLS = ("sh", "bash", "cat", "chmod", "mkdir", "rm", "mv", "cp", "cut", "dirname", "basename", "sleep", "nohup",
         "env", "touch", "sha256sum", "curl", "grep", "sed", "head", "tail", "ls", "id", "date", "true", "false",
         "kill", "echo", "printf", "test", "tr", "wc", "uname", "ps", "setsid", "tee", "stat", "readlink")
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
             "latest NVIDIA driver is installed and running.")
_LIVE: weakref.WeakSet[Machine] = weakref.WeakSet()

_NVIDIA_SMI = """#!/bin/sh
echo "$*" >> "{root}/nvidia-smi.calls"
if [ -e "{root}/nvidia-smi.nodriver" ]; then echo "{no_driver}"; exit 9; fi
case "$*" in
  *--query-gpu=index,uuid*) cat "{root}/uuids.csv" 2>/dev/null; exit 0 ;;
  *--query-compute-apps*) if [ -e "{root}/apps.csv" ]; then cat "{root}/apps.csv"; exit 0; fi; exit 2 ;;
esac
cat "{root}/gpus.csv"
"""

_SYSTEMCTL = '''#!{python}
"""Stub systemctl: log the call; start a unit by running its ExecStart in the background."""
import os, subprocess, sys
root = {root!r}
with open(os.path.join(root, "systemctl.log"), "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
args = [a for a in sys.argv[1:] if not a.startswith("-")]
if args and args[0] in ("start", "enable", "restart") and ("--now" in sys.argv or args[0] != "enable"):
    for unit in args[1:]:
        path = os.path.join(os.environ.get("GPUBOT_ROOT", ""), "etc/systemd/system", unit)
        lines = open(path).read().splitlines()
        command = next(line.split("=", 1)[1] for line in lines if line.startswith("ExecStart="))
        with open(os.path.join(root, unit + ".log"), "ab") as out:
            subprocess.Popen(["sh", "-c", command], stdout=out, stderr=out, stdin=subprocess.DEVNULL)
'''

_START_SH = """#!/bin/sh
touch "{root}/sshd.started"
exec sleep infinity
"""


class Machine:
    """One machine: a scratch root, stub tools, and the processes of its boot command."""

    def __init__(self, root: Path | None = None, gpus: list[tuple] | None = None) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="gpubot-machine-"))
        self.bin = self.root / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        (self.root / "root").mkdir(exist_ok=True)
        self.process: subprocess.Popen | None = None
        self._link_tools()
        self._write_stub("nvidia-smi", _NVIDIA_SMI.format(root=self.root, no_driver=NO_DRIVER))
        self._write_stub("systemctl", _SYSTEMCTL.format(python=sys.executable, root=str(self.root)))
        (self.root / "start.sh").write_text(_START_SH.format(root=self.root))
        (self.root / "start.sh").chmod(0o755)
        self.set_gpus(DEFAULT_GPUS if gpus is None else gpus)
        _LIVE.add(self)

    # -- steering -------------------------------------------------------------------------------------
    def set_gpus(self, rows: list[tuple]) -> None:
        """What nvidia-smi reports: (index, util, temp, MiB used, MiB total) per GPU."""
        text = "".join(", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in row) + "\n" for row in rows)
        (self.root / "gpus.csv").write_text(text)

    def set_processes(self, counts: list[int] | None) -> None:
        """What `--query-compute-apps` reports: `counts[i]` processes on GPU i (None: the query fails, as on a
        driver that cannot list them), each with 500 MiB."""
        uuids = "".join(f"{i}, GPU-{i:08d}-0000-0000-0000-{i:012d}\n" for i in range(len(counts or [])))
        (self.root / "uuids.csv").write_text(uuids)
        apps = self.root / "apps.csv"
        if counts is None:
            apps.unlink(missing_ok=True)
            return
        apps.write_text("".join(f"GPU-{i:08d}-0000-0000-0000-{i:012d}, {4000 + 10 * i + n}, 500\n"
                                for i, count in enumerate(counts) for n in range(count)))

    def no_driver(self) -> None:
        """nvidia-smi fails the way it does on a machine whose NVIDIA driver is not loaded."""
        (self.root / "nvidia-smi.nodriver").touch()

    def without(self, *tools: str) -> None:
        """Remove tools from the machine (e.g. "nvidia-smi", "curl")."""
        for tool in tools:
            (self.bin / tool).unlink(missing_ok=True)

    # -- running --------------------------------------------------------------------------------------
    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment a command on this machine sees."""
        return {"PATH": str(self.bin), "HOME": str(self.root / "root"), "GPUBOT_ROOT": str(self.root),
                "LANG": "C.UTF-8", "NO_PROXY": "*", **(extra or {})}

    def run(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start the machine's main process (its boot command); output goes to `console.log`."""
        if not shutil.which(argv[0], path=str(self.bin)) and not Path(argv[0]).is_file():
            argv = ["sh", "-c", f"echo {shlex.quote(f'exec: {argv[0]}: not found')} >&2; exit 127"]  # as runc says
        with (self.root / "console.log").open("ab") as console:
            self.process = subprocess.Popen(argv, env=self.env(env), cwd=self.root / "root", stdout=console,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        return self.process

    def alive(self) -> bool:
        """True while the main process runs."""
        return self.process is not None and self.process.poll() is None

    def main_command(self) -> str:
        """The command line the main process runs now ('' when it ended): a container whose command has exec'd
        into its last, blocking step (`sleep infinity`) can no longer end by itself."""
        if not self.alive():
            return ""
        with contextlib.suppress(OSError):
            return (Path("/proc") / str(self.process.pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace").strip()
        return ""

    def read(self, relative: str) -> str:
        """A file of the machine, '' when missing (e.g. "opt/gpubot/agent.log")."""
        path = self.root / relative
        return path.read_text(errors="replace") if path.exists() else ""

    def processes(self) -> list[str]:
        """The command lines of every process running on this machine."""
        return [(Path("/proc") / pid / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                for pid in self._pids()]

    def stop(self) -> None:
        """Kill every process the boot command started (its whole session)."""
        if self.process is not None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.process.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(2)
                    break
        self._kill_stragglers()

    def remove(self) -> None:
        """Stop and delete the scratch root."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- set-up ---------------------------------------------------------------------------------------
    def _link_tools(self) -> None:
        host_path = os.environ.get("PATH", "/usr/bin:/bin")
        for tool in TOOLS:
            found = shutil.which(tool, path=host_path)
            if found and not (self.bin / tool).exists():
                (self.bin / tool).symlink_to(found)
        (self.bin / "python3").unlink(missing_ok=True)
        (self.bin / "python3").symlink_to(sys.executable)

    def _write_stub(self, name: str, text: str) -> None:
        path = self.bin / name
        path.unlink(missing_ok=True)
        path.write_text(textwrap.dedent(text))
        path.chmod(0o755)

    def _pids(self) -> list[str]:
        """Processes of this machine, found by the GPUBOT_ROOT in their environment."""
        marker, found = f"GPUBOT_ROOT={self.root}".encode(), []
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit() and int(proc.name) != os.getpid():
                with contextlib.suppress(OSError):
                    if marker in (proc / "environ").read_bytes().split(b"\0"):
                        found.append(proc.name)
        return found

    def _kill_stragglers(self) -> None:
        """Processes that left the session (a stub systemd service, say)."""
        for pid in self._pids():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)


@atexit.register
def _stop_all() -> None:
    for machine in list(_LIVE):
        machine.stop()
