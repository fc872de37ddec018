"""Run the `gpubot` command line in this process (typer's CliRunner on the real app object), or, for the few tests
about the installed entry point itself, as a process."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

__all__ = ["Ran", "gpubot", "gpubot_process"]

# Secrets of the host never reach a test's command line.
_HOST_SECRETS = ("SLACK_", "AUTODL_", "LAMBDA_", "RUNPOD_")


@dataclass(frozen=True)
class Ran:
    """What a command did: its exit code and what it wrote on each stream."""

    returncode: int
    stdout: str
    stderr: str


# Slack's two secrets, shaped as Slack's are: check-config refuses a configuration without them.
SLACK_SET = {"SLACK_BOT_TOKEN": "xoxb-cli-test", "SLACK_SIGNING_SECRET": "8f14e45fceea167a5a36dedd4bea2543"}


def gpubot(*args: str, cwd: Path, stdin: str | None = None, env: dict | None = None) -> Ran:
    """`gpubot ARGS` in this process, in `cwd`, with the environment's secrets removed and `env` added."""
    from gpubot.cli import app

    scrubbed: dict[str, str | None] = {k: None for k in os.environ if k.startswith(_HOST_SECRETS)}
    with contextlib.chdir(cwd):
        result = CliRunner().invoke(app, list(args), input=stdin, env={**scrubbed, **(env or {})},
                                    catch_exceptions=False)
    return Ran(result.exit_code, result.stdout, result.stderr)


def gpubot_process(*args: str, cwd: Path, stdin: str | None = None, env: dict | None = None) -> Ran:
    """`python -m gpubot ARGS` as a process of its own, as an operator runs it."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(_HOST_SECRETS)}
    done = subprocess.run([sys.executable, "-m", "gpubot", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=120, env={**clean, **(env or {})})
    return Ran(done.returncode, done.stdout, done.stderr)
