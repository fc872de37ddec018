"""Where Terraform works for gpubot, under `state_dir`:

    plugin-cache/                 provider plugins, shared by every module version (TF_PLUGIN_CACHE_DIR)
    modules/<version>/            a copy of the team's module at one version (a hash of its files), initialised
                                  once (`terraform init`), with gpubot_override.tf keeping its state local
    bookings/<provider>/<name>/   one booking's working directory: a copy of the module version it was launched
                                  with (so that a later destroy runs the code that applied it, even after the
                                  module changed), gpubot.auto.tfvars.json (its variables, mode 0600), gpubot.json
                                  (what was launched) and terraform.tfstate (its state)

Directories appear whole: each is built under a temporary name and renamed into place, so a crash leaves no
half-copied module and no half-written booking. Initialising a version is serialised by a file lock, so that two
launches (or two processes on one state_dir) initialise it once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpubot.domain.errors import ConfigError
from gpubot.domain.model import parse_instance_tag

__all__ = ["FACTS_FILE", "STATE_FILE", "VARS_FILE", "InitFailed", "State", "Workdirs", "module_version",
           "read_state"]

STATE_FILE = "terraform.tfstate"
VARS_FILE = "gpubot.auto.tfvars.json"  # Terraform loads *.auto.tfvars.json by itself, for every command
FACTS_FILE = "gpubot.json"
OVERRIDE_FILE = "gpubot_override.tf"
# Each booking keeps its own state in its working directory, whatever backend the module names.
OVERRIDE = 'terraform {\n  backend "local" {}\n}\n'
_SKIPPED_DIRS = {".terraform", ".git", "terraform.tfstate.d"}
_SKIPPED_FILES = {".terraform.tfstate.lock.info", "crash.log", OVERRIDE_FILE}

log = logging.getLogger(__name__)


class InitFailed(Exception):
    """`terraform init` of a module version failed; `result` says why."""

    def __init__(self, result: Any) -> None:
        super().__init__(result.first_problem())
        self.result = result


@dataclass(frozen=True)
class State:
    """What a booking's Terraform state holds: how many managed resources, and the root module's outputs."""

    resources: int
    outputs: dict[str, Any]


def module_version(module: Path) -> str:
    """A hash of the module's files (names and contents), 16 hex digits."""
    files = _module_files(module)
    if not any(path.suffix in (".tf", ".json") for path in files):
        raise ConfigError("module", str(module), "a directory holding a Terraform module (*.tf files)")
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(module).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def read_state(directory: Path, tries: int = 5, pause: float = 0.1) -> State:
    """The state in a working directory (Terraform's JSON state, format version 4); empty when there is none.

    Terraform rewrites its local state in place (truncate, then write), so a state read mid-write is empty or cut
    short: it is read again a moment later. One still unreadable (a Terraform killed as it wrote) may hide
    resources, so it counts as holding one, with no outputs (an unfinished apply, for reconciliation)."""
    for attempt in range(tries):
        try:
            raw = json.loads((directory / STATE_FILE).read_text(encoding="utf-8"))
            break
        except FileNotFoundError:
            return State(0, {})
        except (ValueError, UnicodeDecodeError):
            if attempt + 1 < tries:
                time.sleep(pause)
    else:
        log.warning("the Terraform state in %s cannot be read; counting it as holding resources", directory)
        return State(1, {})
    if not isinstance(raw, dict):
        return State(1, {})
    resources = sum(1 for r in raw.get("resources", []) if r.get("mode") == "managed" and r.get("instances"))
    outputs = {name: output.get("value") for name, output in (raw.get("outputs") or {}).items()}
    return State(resources, outputs)


class Workdirs:
    """The working directories of one provider under `state_dir` (see the module docstring)."""

    def __init__(self, state_dir: Path, provider: str) -> None:
        self.root = state_dir
        self.plugin_cache = state_dir / "plugin-cache"
        self._modules = state_dir / "modules"
        self._bookings = state_dir / "bookings" / provider

    def prepared(self, module: Path, init: Callable[[Path], Any]) -> Path:
        """The initialised copy of the module's current version, made (copied, then `init(dir)`) on first use."""
        version = module_version(module)
        target = self._modules / version
        if target.is_dir():
            return target
        with _locked(self._modules / f"{version}.lock"):
            if target.is_dir():
                return target
            scratch = self._modules / f".{version}.{uuid.uuid4().hex[:8]}"
            _copy_module(module, scratch)
            (scratch / OVERRIDE_FILE).write_text(OVERRIDE, encoding="utf-8")
            result = init(scratch)
            if not result.ok:
                shutil.rmtree(scratch, ignore_errors=True)
                raise InitFailed(result)
            scratch.rename(target)
        return target

    def create(self, name: str, version_dir: Path, variables: dict[str, Any], facts: dict[str, Any]) -> Path:
        """The booking's working directory: made from `version_dir` with its variables, or the one already there."""
        target = self._bookings / name
        if target.is_dir():
            return target
        self._bookings.mkdir(parents=True, exist_ok=True, mode=0o700)
        scratch = self._bookings / f".{name}.{uuid.uuid4().hex[:8]}"
        shutil.copytree(version_dir, scratch, symlinks=True)
        scratch.chmod(0o700)
        _write_private(scratch / VARS_FILE, json.dumps(variables, indent=2))
        _write_private(scratch / FACTS_FILE, json.dumps({**facts, "module_version": version_dir.name}, indent=2))
        scratch.rename(target)
        return target

    def find(self, name: str) -> Path | None:
        """The booking's working directory, or None."""
        path = self._bookings / name
        return path if name and parse_instance_tag(name) and path.is_dir() else None

    def names(self) -> list[str]:
        """Every booking that has a working directory."""
        if not self._bookings.is_dir():
            return []
        return sorted(p.name for p in self._bookings.iterdir() if p.is_dir() and parse_instance_tag(p.name))

    def remove(self, name: str) -> None:
        """Delete the booking's working directory (its state says it holds nothing)."""
        path = self._bookings / name
        if path.is_dir():
            grave = self._bookings / f".{name}.removed.{uuid.uuid4().hex[:8]}"
            path.rename(grave)  # gone from names() at once, even if the delete below is cut short
            shutil.rmtree(grave, ignore_errors=True)


def facts_of(directory: Path) -> dict[str, Any]:
    """What gpubot.json says was launched in a working directory ({} when unreadable)."""
    try:
        return json.loads((directory / FACTS_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {}


def _module_files(module: Path) -> list[Path]:
    if not module.is_dir():
        raise ConfigError("module", str(module), "a directory holding a Terraform module")
    found = []
    for folder, dirs, files in os.walk(module):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        found += [Path(folder) / f for f in sorted(files) if _kept(f)]
    return found


def _kept(filename: str) -> bool:
    return filename not in _SKIPPED_FILES and ".tfstate" not in filename


def _copy_module(module: Path, target: Path) -> None:
    for path in _module_files(module):
        destination = target / path.relative_to(module)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, destination)


def _write_private(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
