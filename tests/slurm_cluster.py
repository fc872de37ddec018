"""A real one-node Slurm cluster for tests: munged, slurmctld and slurmd from Debian's packages, all in one scratch
directory, on ports of their own, listening on 127.0.0.1 only.

The node `gpunode1` declares 16 CPUs and 8 GPUs as generic resources, `gpu:a100:4,gpu:h100:4`, backed by fake
device files (symlinks to /dev/null: Slurm drops file-less GPUs and rejects regular files). Its one partition, `gpu`,
has a MaxTime of 10 minutes so that extending past it can be tried (tests/slurm_files.py writes the config, each
unusual setting with its reason; docs/providers.md, "The team's Slurm cluster", has the whole story).

Each pytest process (each xdist worker) runs its own cluster: it starts in about 0.4 s, and tests that count free
GPUs on the node or fill it could not share one. Ports are asked of the kernel (bind to port 0) and a start that
loses a port race anyway is tried again on fresh ports. Needs root (slurmd launches jobs as other users) and the
packages (`.ci/run` installs them). `python -m tests.slurm_cluster` starts one by hand and prints how to use it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.process_tree import kill_tree, pids_with_env, stop_pid
from tests.slurm_files import MAX_TIME_MINUTES, NODE, PARTITION, write_files

__all__ = ["INSTALL_HINT", "MAX_TIME_MINUTES", "NODE", "PARTITION", "TEST_USER", "ClusterFailed", "SlurmCluster",
           "ensure_test_user", "missing_tools", "slurm", "slurm_cluster", "start_cluster", "stop_cluster", "wait_for"]

TEST_USER = "gpubot-alice"  # a system user the fixture creates when missing (jobs are submitted as it)
TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
INSTALL_HINT = ("apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge "
                "(as root; .ci/run does it in CI)")
SBIN = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MARKER = "GPUBOT_TEST_SLURM_ROOT"  # in slurmd's environment, inherited by slurmstepd: finds leftover job processes
USERADD_LOCK = Path(tempfile.gettempdir()) / "gpubot-slurm-useradd.lock"


class ClusterFailed(RuntimeError):
    """The cluster did not come up; the message carries the daemons' logs."""


@dataclass
class SlurmCluster:
    """A running cluster: its scratch directory, ports and daemons."""

    root: Path
    ctld_port: int
    slurmd_port: int
    daemons: dict[str, subprocess.Popen] = field(default_factory=dict)
    munged_pid: int | None = None

    @property
    def conf(self) -> Path:
        """The cluster's slurm.conf (what SLURM_CONF names)."""
        return self.root / "etc" / "slurm.conf"

    @property
    def scratch(self) -> Path:
        """A world-writable directory inside the cluster's root: the working directory of the tests' jobs."""
        return self.root / "tmp"

    def provider_toml(self, users: dict[str, str]) -> str:
        """The `[providers.lab]` block of a gpubot policy booking on this cluster, `users` mapped Slack → cluster."""
        mapped = ", ".join(f'{slack} = "{user}"' for slack, user in users.items())
        return (f'[providers.lab]\nkind = "slurm"\npartition = "gpu"\ngpu_types = {{ a100 = "a100", h100 = "h100" }}\n'
                f'prices = {{ a100 = 0.90, h100 = 1.80 }}\nusers = {{ {mapped} }}\nslurm_conf = "{self.conf}"\n'
                f'workdir = "{self.scratch}"\n')

    def env(self) -> dict[str, str]:
        """An environment for the client tools: only what they need."""
        return {"PATH": SBIN, "SLURM_CONF": str(self.conf), "TZ": "UTC", "LC_ALL": "C"}

    def run(self, *args: str, input: str | None = None, check: bool = True, timeout: float = 20
            ) -> subprocess.CompletedProcess:
        """Run a client tool against this cluster."""
        done = subprocess.run(list(args), env=self.env(), input=input, capture_output=True, text=True,
                              timeout=timeout, cwd=self.scratch)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
        return done

    def job_ids(self, states: str = "all") -> list[str]:
        """Ids of the jobs squeue lists in `states`."""
        out = self.run("squeue", "-h", "-t", states, "-o", "%i").stdout
        return out.split()

    def cancel_all(self, timeout: float = 20) -> None:
        """Cancel every job and wait until none holds resources (running, completing, suspended)."""
        live = self.job_ids("PD,R,CG,S,CF")
        if live:
            self.run("scancel", *live, check=False)
        wait_for(lambda: not self.job_ids("R,CG,S,CF"), timeout, "jobs to end", self.logs)

    def logs(self) -> str:
        """The tail of every daemon's log, for a failure message."""
        parts = []
        for log in [*sorted((self.root / "log").glob("*")), self.root / "munge" / "munged.log"]:
            if log.is_file():
                lines = log.read_text(errors="replace").splitlines()[-25:]
                parts.append(f"--- {log.name}\n" + "\n".join(lines))
        return "\n".join(parts) or "(no logs)"


def missing_tools() -> list[str]:
    """The Slurm and munge programs not found on PATH (or in the sbin directories)."""
    return [tool for tool in TOOLS if shutil.which(tool, path=f"{os.environ.get('PATH', '')}:{SBIN}") is None]


def ensure_test_user(name: str = TEST_USER) -> pwd.struct_passwd:
    """The test user, created (a system user with no home and no login shell) when missing; a lock keeps two
    workers from running useradd at once. It stays on the machine afterwards, like the packages."""
    with open(USERADD_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                           check=True, capture_output=True, env={"PATH": SBIN})
            return pwd.getpwnam(name)


def wait_for(condition: Callable[[], bool], timeout: float, what: str, logs: Callable[[], str] | None = None,
             every: float = 0.05) -> None:
    """Poll `condition` until it holds; fail after `timeout` seconds naming `what` (with the logs)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise ClusterFailed(f"timed out after {timeout:g}s waiting for {what}\n{logs() if logs else ''}")
        time.sleep(every)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_munged(cluster: SlurmCluster) -> None:
    munge = cluster.root / "munge"
    subprocess.run(["munged", f"--key-file={munge}/munge.key", f"--socket={munge}/munge.socket",
                    f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log",
                    f"--seed-file={munge}/munged.seed"], check=True, capture_output=True, env={"PATH": SBIN})
    cluster.munged_pid = int((munge / "munged.pid").read_text())


def _start_daemon(cluster: SlurmCluster, name: str, *args: str) -> subprocess.Popen:
    """A daemon in the foreground (-D) as our child, so its PID is known and nothing is ever found by name."""
    out = open(cluster.root / "log" / f"{name}.out", "wb")  # noqa: SIM115 - the daemon writes to it until it ends
    env = {**cluster.env(), MARKER: str(cluster.root)}
    proc = subprocess.Popen([name, "-D", *args, "-f", str(cluster.conf)], stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    out.close()
    cluster.daemons[name] = proc
    return proc


def _node_idle(cluster: SlurmCluster) -> bool:
    done = cluster.run("scontrol", "-o", "show", "node", NODE, check=False)
    return done.returncode == 0 and " State=IDLE " in done.stdout


def _port_lost(cluster: SlurmCluster) -> bool:
    logs = cluster.logs()
    return "Address already in use" in logs or "Error binding slurm stream socket" in logs


def _bring_up(cluster: SlurmCluster, timeout: float) -> None:
    _start_munged(cluster)
    ctld = _start_daemon(cluster, "slurmctld", "-c")  # -c: clean state, no jobs from an earlier run
    wait_for(lambda: _stopped(cluster) or _pings(cluster), timeout, "slurmctld to answer", cluster.logs)
    slurmd = _start_daemon(cluster, "slurmd", "-N", NODE)  # a fixed node name, whatever the host is called
    wait_for(lambda: _stopped(cluster) or _node_idle(cluster), timeout, f"{NODE} to be idle", cluster.logs)
    if _stopped(cluster):
        raise ClusterFailed(f"a daemon exited or lost its port (slurmctld {ctld.poll()}, slurmd {slurmd.poll()})\n"
                            f"{cluster.logs()}")


def _answers(cluster: SlurmCluster) -> bool:
    """Whether this cluster's slurmctld runs and answers (soon: a port taken by another listener never answers)."""
    ctld = cluster.daemons.get("slurmctld")
    return ctld is not None and ctld.poll() is None and not _port_lost(cluster) and _pings(cluster, timeout=5)


def _pings(cluster: SlurmCluster, timeout: float = 1) -> bool:
    """`scontrol ping` answered within `timeout` (a port another listener holds never answers)."""
    try:
        return cluster.run("scontrol", "ping", check=False, timeout=timeout).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _stopped(cluster: SlurmCluster) -> bool:
    """A daemon exited, or found its port taken (slurmctld keeps retrying the bind rather than exit)."""
    return any(proc.poll() is not None for proc in cluster.daemons.values()) or _port_lost(cluster)


def start_cluster(root: Path | None = None, timeout: float = 20, attempts: int = 3) -> SlurmCluster:
    """Start a cluster under `root` (a fresh temporary directory by default); ClusterFailed with the logs when it
    does not come up. A start that lost a port to another process is tried again on fresh ports."""
    if missing := missing_tools():
        raise ClusterFailed(f"the Slurm tests need {', '.join(missing)}: install them with {INSTALL_HINT}")
    if os.geteuid() != 0:
        raise ClusterFailed("the Slurm tests need root: slurmd starts jobs as another user")
    root = root or Path(tempfile.mkdtemp(prefix="gpubot-slurm-"))
    for attempt in range(1, attempts + 1):
        cluster = SlurmCluster(root, _free_port(), _free_port())
        write_files(root, cluster.ctld_port, cluster.slurmd_port)
        try:
            _bring_up(cluster, timeout)
            return cluster
        except ClusterFailed:
            lost = _port_lost(cluster)
            stop_cluster(cluster, keep=lost and attempt < attempts)  # the logs are in the message raised
            if not lost or attempt == attempts:
                raise
            for log in (root / "log").glob("*"):
                log.unlink()
    raise AssertionError("unreachable")


def stop_cluster(cluster: SlurmCluster, keep: bool = False) -> None:
    """Cancel every job (slurmd's stop does not end them), stop the daemons by the PIDs recorded at start, kill
    any job process left behind (found by the marker in its environment), then remove the scratch directory
    (kept with `keep`, for its logs)."""
    # the daemons are stopped below all the same, and leftover job processes killed
    with contextlib.suppress(ClusterFailed, AssertionError, subprocess.TimeoutExpired):
        if _answers(cluster):
            cluster.cancel_all()
    for name in ("slurmd", "slurmctld"):
        proc = cluster.daemons.pop(name, None)
        if proc is not None:
            stop_pid(proc.pid)
            proc.wait(timeout=10)
    if cluster.munged_pid:
        stop_pid(cluster.munged_pid)
        cluster.munged_pid = None
    for pid in pids_with_env(f"{MARKER}={cluster.root}"):
        kill_tree(pid)
    if not keep:
        shutil.rmtree(cluster.root, ignore_errors=True)


if __name__ == "__main__":
    started = time.monotonic()
    up = start_cluster()
    print(f"cluster up in {time.monotonic() - started:.2f}s under {up.root}\n  export SLURM_CONF={up.conf}\n"
          "Press Ctrl-C to stop it.")
    try:
        signal.pause()
    except KeyboardInterrupt:
        stop_cluster(up)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """This process's own cluster (one per xdist worker), stopped at the end of the session. It fails, never skips,
    when it cannot start: the message says why, with the daemons' logs or how to install the packages."""
    try:
        ensure_test_user()
        cluster = start_cluster()
    except (ClusterFailed, subprocess.CalledProcessError) as exc:
        pytest.fail(f"the test Slurm cluster did not start: {exc}", pytrace=False)
    yield cluster
    stop_cluster(cluster)


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The cluster with no job left from an earlier test, and none left behind by this one."""
    slurm_cluster.cancel_all()
    yield slurm_cluster
    slurm_cluster.cancel_all()
