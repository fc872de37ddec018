"""Processes found and stopped by PID, never by name: the test cluster's daemons, and the job processes it leaves
behind (found by a marker in their environment)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

__all__ = ["alive", "kill_tree", "pids_with_env", "stop_pid"]


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie, not yet reaped, counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def stop_pid(pid: int, timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL if it is still running after `timeout` seconds."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def pids_with_env(entry: str) -> list[int]:
    """Processes (but this one) whose environment holds `entry` (`NAME=value`)."""
    needle, found = entry.encode(), []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if needle in (proc / "environ").read_bytes().split(b"\0"):
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


def _children(pid: int) -> list[int]:
    kids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if int((proc / "stat").read_text().split(") ", 1)[1].split()[1]) == pid:
                kids.append(int(proc.name))
        except (OSError, IndexError, ValueError):
            continue
    return kids


def kill_tree(pid: int) -> None:
    """SIGKILL the process and all its descendants."""
    for child in _children(pid):
        kill_tree(child)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
