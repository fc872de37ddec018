"""Run a command under a pseudo-terminal, as a person at a terminal would: wait for text, type lines, read all
that was shown. Standard library only (pty, select)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

__all__ = ["Terminal", "plain"]

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b[=>]|\r")


def plain(text: str) -> str:
    """Terminal output without escape sequences and carriage returns."""
    return _ESCAPES.sub("", text)


class Terminal:
    """A process whose stdin, stdout and stderr are one pseudo-terminal, `columns` wide."""

    def __init__(self, argv: list[str], cwd: Path, env: dict, columns: int = 100) -> None:
        self.master, slave = pty.openpty()
        os.set_blocking(self.master, False)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        self.process = subprocess.Popen(argv, cwd=cwd, env={**env, "TERM": "xterm", "COLUMNS": str(columns)},
                                        stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.output = ""

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the process closed the terminal
            return False
        self.output += data.decode("utf-8", "replace")
        return bool(data)

    def expect(self, text: str, timeout: float = 60, after: int = 0) -> int:
        """Wait until `text` is shown (after position `after` of the plain output); returns where it ends."""
        deadline = time.monotonic() + timeout
        while True:
            shown = plain(self.output)
            found = shown.find(text, after)
            if found >= 0:
                return found + len(text)
            if time.monotonic() > deadline:
                raise AssertionError(f"never saw {text!r}; the terminal shows:\n{shown[-3000:]}")
            if not self._read(0.2) and self.process.poll() is not None:
                self._read(0.2)
                if text not in plain(self.output)[after:]:
                    raise AssertionError(f"exited ({self.process.returncode}) before {text!r}:\n{shown[-3000:]}")

    def type(self, line: str) -> None:
        """Type a line and press Enter."""
        os.write(self.master, (line + "\r").encode())

    def keys(self, raw: bytes) -> None:
        """Press keys (escape sequences such as b"\\x1b[A" for the up arrow)."""
        os.write(self.master, raw)

    def finish(self, timeout: float = 60) -> str:
        """Wait for the process to end (reading everything it shows); returns the plain output."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.2)
        while self._read(0.1):
            pass
        if self.process.poll() is None:
            self.kill()
            raise AssertionError(f"still running after {timeout} s:\n{plain(self.output)[-3000:]}")
        return plain(self.output)

    def kill(self) -> None:
        """Stop the process and its children."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        os.close(self.master)
