"""What cloud-init does with user data, for the subset gpubot sends, on a tests.fakes.machine.Machine.

`#cloud-config`: `ssh_authorized_keys` are appended to the user's ~/.ssh/authorized_keys; `write_files` entries
are written (plain or `encoding: b64`, with their `permissions`) under the machine's root; `runcmd` entries
become one shell script, run once, as cloud-init's scripts-user stage does (a list entry is an argv, a string
entry a shell line; an argument naming a file that write_files wrote is mapped into the root). A user data that
starts with `#!` is run as that script. Other cloud-config keys fail loudly rather than being ignored.
"""

from __future__ import annotations

import base64
import shlex
import subprocess
from pathlib import Path

import yaml

from tests.fakes.machine import Machine

__all__ = ["parse_cloud_config", "run_user_data"]

KNOWN_KEYS = {"ssh_authorized_keys", "write_files", "runcmd"}


def parse_cloud_config(user_data: str) -> dict:
    """The cloud-config document; AssertionError when it is not one cloud-init would accept as such."""
    assert user_data.startswith("#cloud-config\n"), "cloud-init reads a cloud-config only after '#cloud-config'"
    document = yaml.safe_load(user_data)
    assert isinstance(document, dict), "a cloud-config is a mapping"
    assert set(document) <= KNOWN_KEYS, f"keys this fake does not model: {set(document) - KNOWN_KEYS}"
    return document


def run_user_data(machine: Machine, user_data: str) -> subprocess.Popen:
    """Apply the user data on the machine; the process of its scripts (it ends when they end)."""
    if user_data.startswith("#!"):
        return _run_script(machine, user_data)
    document = parse_cloud_config(user_data)
    home = machine.root / "root"
    for key in document.get("ssh_authorized_keys") or []:
        (home / ".ssh").mkdir(mode=0o700, exist_ok=True)
        with (home / ".ssh" / "authorized_keys").open("a") as keys:
            keys.write(key + "\n")
    written = {entry["path"]: _write_file(machine, entry) for entry in document.get("write_files") or []}
    lines = []
    for entry in document.get("runcmd") or []:
        lines.append(shlex.join(written.get(str(a), str(a)) for a in entry) if isinstance(entry, list) else entry)
    return _run_script(machine, "#!/bin/sh\n" + "\n".join(lines) + "\n")


def _write_file(machine: Machine, entry: dict) -> str:
    path = machine.root / entry["path"].lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    content = entry.get("content", "")
    data = base64.b64decode(content) if entry.get("encoding") in ("b64", "base64") else content.encode()
    path.write_bytes(data)
    path.chmod(int(str(entry.get("permissions", "0644")), 8))
    return str(path)


def _run_script(machine: Machine, text: str) -> subprocess.Popen:
    script = Path(machine.root / "var/lib/cloud/instance/scripts/user-data")
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(text)
    script.chmod(0o700)
    return machine.run([str(script)])
