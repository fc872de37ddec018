"""Slurm's client tools (sbatch, scontrol, scancel) run as child processes, and their failures as our errors.

Every tool runs with a timeout, in an environment of its own: PATH (with `bin_dir` first), SLURM_CONF when known,
TZ=UTC (so the times it prints are UTC) and LC_ALL=C; nothing else of gpubot's environment (its tokens and
passwords) reaches a tool, or a job, which would otherwise inherit it. Arguments are a list, never a shell line.
What a tool prints is read by `parsing`; here only the exit status and the error text are judged:

- the controller unreachable, a timeout, a tool that cannot run, an answer we cannot read (`read`): Transient;
- "Invalid job id specified": the job is gone (JobGone, which the adapter reads as "terminated", or as done);
- the cluster refusing a request (a shape no node can hold, a time limit or QOS limit passed): InvalidRequest, or
  QuotaExceeded for an accounting/QOS limit; "Invalid --uid"/"Invalid user id": NoAccess (that person's
  account); "Access/permission denied": AuthFailed (gpubot may not act for users).
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from gpubot.domain.errors import AuthFailed, InvalidRequest, NoAccess, ProviderError, QuotaExceeded, Transient
from gpubot.providers.slurm.parsing import SlurmParseError, cluster_reason

__all__ = ["JobGone", "SlurmCommands", "Tool"]

log = logging.getLogger(__name__)

T = TypeVar("T")
Tool = Callable[..., subprocess.CompletedProcess]  # subprocess.run's signature: the seam a test may replace
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

_UNREACHABLE = ("Unable to contact slurm controller", "Socket timed out", "Zero Bytes were transmitted",
                "Connection refused", "Communication connection failure", "Unable to establish", "Munge",
                "munge", "Could not establish a configuration source", "Slurm backup controller in standby mode")
_GONE = ("Invalid job id specified",)
_QUOTA = ("Job violates accounting/QOS policy", "QOSMaxSubmitJobPerUserLimit", "AssocMaxSubmitJobLimit")
_NO_USER = ("Invalid --uid specification", "Invalid --gid specification", "Invalid user id")
_DENIED = ("Access/permission denied", "Access denied", "Only root", "User not allowed")
_REFUSED = ("Requested node configuration is not available", "Requested time limit is invalid",
            "Invalid account", "Invalid qos", "Invalid partition", "Invalid generic resource", "Invalid")


class JobGone(LookupError):
    """The controller no longer knows the job (it ended more than MinJobAge ago, or never existed). Never leaves
    the adapter: describe reads it as "terminated", terminate as done."""


@dataclass(frozen=True)
class SlurmCommands:
    """Runs one tool at a time against the cluster that `slurm_conf` names."""

    provider: str
    slurm_conf: str | None = None
    bin_dir: str | None = None
    timeout: float = 20.0
    tool: Tool = subprocess.run

    def env(self) -> dict[str, str]:
        """The tools' whole environment."""
        path = os.environ.get("PATH") or DEFAULT_PATH
        env = {"PATH": f"{self.bin_dir}:{path}" if self.bin_dir else path, "TZ": "UTC", "LC_ALL": "C"}
        if self.slurm_conf:
            env["SLURM_CONF"] = self.slurm_conf
        return env

    def run(self, name: str, *args: str, stdin: str | None = None, check: bool = True) -> str:
        """The tool's standard output; a failure raised as our error (see the module docstring)."""
        done = self.attempt(name, *args, stdin=stdin)
        if check and done.returncode != 0:
            raise self.error(name, done.stderr or done.stdout)
        return done.stdout

    def read(self, parse: Callable[[str], T], name: str, *args: str, stdin: str | None = None) -> T:
        """The tool's output read by `parse`; an output it cannot read is Transient (an unknown answer)."""
        out = self.run(name, *args, stdin=stdin)
        try:
            return parse(out)
        except SlurmParseError as exc:
            log.warning("%s: unreadable answer from %s: %s", self.provider, name, out[:500])
            raise Transient(self.provider, f"unreadable answer from {name}: {exc}") from None

    def attempt(self, name: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        """Run the tool and hand back what it did, whatever its exit status; Transient only when it could not run."""
        program = os.path.join(self.bin_dir, name) if self.bin_dir else name
        try:
            return self.tool([program, *args], input=stdin, capture_output=True, text=True, timeout=self.timeout,
                             env=self.env(), cwd="/", check=False)
        except subprocess.TimeoutExpired:
            raise Transient(self.provider, f"{name} did not answer within {self.timeout:g}s") from None
        except OSError as exc:  # not installed, not executable
            raise Transient(self.provider, f"{name} could not run ({exc.strerror or exc}): is the Slurm client "
                                           "installed (slurm-client) and on PATH or in bin_dir?") from None

    def error(self, name: str, stderr: str) -> ProviderError | JobGone:
        """The error a tool's failure means; the message is the cluster's own words."""
        reason = cluster_reason(stderr) or f"{name} failed without a message"
        if _has(stderr, _GONE):
            return JobGone(self.provider, reason)
        if _has(stderr, _UNREACHABLE):
            return Transient(self.provider, reason)
        if _has(stderr, _QUOTA):
            return QuotaExceeded(self.provider, reason)
        if _has(stderr, _NO_USER):
            return NoAccess(self.provider, reason)
        if _has(stderr, _DENIED):
            return AuthFailed(self.provider, reason)
        if _has(stderr, _REFUSED):
            return InvalidRequest(self.provider, reason)
        log.warning("%s: %s failed with an unknown answer: %s", self.provider, name, stderr.strip()[:500])
        return Transient(self.provider, reason)


def _has(text: str, needles: tuple[str, ...]) -> bool:
    return any(needle in text for needle in needles)
