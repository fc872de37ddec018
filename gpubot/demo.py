"""`gpubot demo`: the real bot on the simulated cloud, with a local stand-in for Slack, in the terminal (or in a
browser with --web). Everything the demo does is kept in its own database: the simulated cloud's machines too,
and (beside a SQLite file) the Slack messages and the typed history, so a restart carries on where it stopped.
One demo at a time may use a database: a second one is refused, because two clouds would share one ledger."""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import SecretStr

from gpubot.domain.policy import Policy

__all__ = ["DemoBusy", "DemoFiles", "banner", "hold", "run_demo"]


class DemoBusy(Exception):
    """Another demo already uses this database."""


@dataclass(frozen=True)
class DemoFiles:
    """The demo's database and, for a SQLite file, the files kept beside it."""

    url: str
    shown: str  # how the database is named to people: `gpubot-demo.db`, or the URL
    lock: Path | None = None
    slack: Path | None = None
    history: Path | None = None

    @classmethod
    def of(cls, url: str) -> DemoFiles:
        """The files for a database URL (only a SQLite file has files beside it)."""
        if not url.startswith("sqlite:///") or url.endswith(":memory:"):
            return cls(url, url)
        path = Path(url.removeprefix("sqlite:///"))
        beside = lambda suffix: path.with_name(path.name + suffix)  # noqa: E731
        return cls(url, str(path), beside(".lock"), beside(".slack.json"), beside(".history"))


@contextmanager
def hold(files: DemoFiles) -> Iterator[None]:
    """Hold the demo database's lock file for the life of the demo; raise DemoBusy when another demo holds it."""
    if files.lock is None:
        yield
        return
    files.lock.parent.mkdir(parents=True, exist_ok=True)
    with files.lock.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "?"
            raise DemoBusy(f"another gpubot demo (pid {owner}) is using {files.shown}; stop it first, or give this "
                           f"one its own database: --database other-demo.db") from None
        handle.truncate(0)
        handle.write(str(os.getpid()))
        handle.flush()
        yield  # the lock goes with the file handle, also when the process is killed


def banner(files: DemoFiles, web: bool) -> str:
    """What the demo says before its prompt: what it is, how to use it, and how to report on its ledger."""
    where = f"kept in {files.shown}" if files.lock else f"in {files.shown}"
    other = "the same demo in a terminal: gpubot demo" if web else "the same in a browser: make sandbox"
    return (f"gpubot demo — the simulated cloud and a local ledger ({where}, carried on at the next start); no "
            f"Slack needed.\n"
            f"Type /gpu help, /gpu book a100x4 6h, /gpu status …; a number clicks that button; 'quit' leaves "
            f"({other}).\n"
            f"Reports on this ledger: {_command()} report cost --database {files.shown} (also digest, export "
            f"ledger).")


def _command() -> str:
    """How to run `gpubot` from a shell: its name when that is on PATH, else where it is installed (make demo's
    .venv/bin/gpubot, or `source .venv/bin/activate` first)."""
    here = Path(sys.executable).with_name("gpubot")
    found = shutil.which("gpubot")
    if found and Path(found).resolve() == here.resolve():
        return "gpubot"
    try:
        return str(here.relative_to(Path.cwd()))
    except ValueError:
        return str(here)


def run_demo(policy: Policy, url: str, *, web: bool = False, port: int = 8080) -> None:
    """Run the demo until the person quits (or Ctrl-C); DemoBusy when another demo uses the database."""
    from gpubot.logs import setup_logging
    from gpubot.runtime import Runtime
    from gpubot.sandbox.slack_api import FakeSlackApi
    from gpubot.settings import Settings
    from gpubot.wiring import wire

    files = DemoFiles.of(url)
    with hold(files):
        api = FakeSlackApi(keep_in=files.slack)
        secret = secrets.token_hex(16)
        settings = Settings(slack_bot_token=SecretStr("xoxb-demo"), slack_signing_secret=SecretStr(secret),
                            slack_api_url=api.start(), database_url=url, _env_file=None)
        setup_logging("WARNING", "console", [secret])
        runtime = Runtime(wire(settings, policy, keep_simulated=True))
        runtime.start_background()
        user = (policy.team.admins or ["UDEMO"])[0]
        try:
            if web:
                _serve_sandbox(runtime, api, secret, user, port, banner(files, web))
            else:
                from gpubot.console import Console

                Console(runtime.wired, api, secret, user=user, banner=banner(files, web),
                        history=files.history).loop()
        finally:
            runtime.stop()
            api.stop()


def _serve_sandbox(runtime, api, secret: str, user: str, port: int, text: str) -> None:
    import uvicorn

    from gpubot.sandbox.page import page_app
    from gpubot.sandbox.web import Sandbox

    sandbox = Sandbox(runtime, api, secret, user)
    sandbox.start_bot()
    print(f"gpubot sandbox: open http://127.0.0.1:{port} (Ctrl-C to stop)\n{text.split(chr(10))[-1]}", flush=True)
    try:
        uvicorn.run(page_app(sandbox), host="127.0.0.1", port=port, log_level="warning", access_log=False)
    finally:
        sandbox.stop_bot()
