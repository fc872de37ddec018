"""Run `gpubot serve` as a real subprocess against a local Slack Web API, and talk to it like Slack does.

The end-to-end tests and the benchmarks both start the bot this way.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import httpx

from gpubot.db.database import Database
from gpubot.sandbox.requests import (
    action_body,
    event_body,
    home_action_body,
    sign,
    slash_command_body,
    view_submission_body,
)
from gpubot.sandbox.slack_api import FakeSlackApi

__all__ = ["BOT_TOKEN", "SECRET", "RunningBot", "free_port", "serving", "start_bot", "wait_healthy"]

SECRET = "e2e0516e6e15ec7e75ecc0de0123456f"  # shaped like Slack's: 32 hexadecimal characters
BOT_TOKEN = "xoxb-e2e-token-abcdef"


def free_port() -> int:
    """An unused loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RunningBot:
    """A gpubot process and the fake Slack it talks to."""

    url: str
    api: FakeSlackApi
    process: subprocess.Popen
    log_path: Path
    env: dict = field(default_factory=dict)
    _n: int = 0

    def post(self, body: bytes, headers: dict | None = None, signed: bool = True) -> httpx.Response:
        """POST raw bytes to /slack/events, signed unless told otherwise."""
        all_headers = {"Content-Type": "application/x-www-form-urlencoded", **(sign(SECRET, body) if signed else {}),
                       **(headers or {})}
        return httpx.post(f"{self.url}/slack/events", content=body, headers=all_headers, timeout=10)

    def command(self, text: str, user: str = "UALICE", channel: str = "CGPU", **extra) -> httpx.Response:
        """Send `/gpu <text>` as a slash command."""
        self._n += 1
        body = slash_command_body(text, user=user, channel=channel,
                                  response_url=self.api.response_url(f"r{self._n}"), **extra)
        return self.post(body)

    def click(self, action_id: str, booking_id: int, user: str, message_ts: str, channel: str = "CGPU"
              ) -> httpx.Response:
        """Click a button on a booking message."""
        self._n += 1
        body = action_body(action_id, str(booking_id), user=user, channel=channel, message_ts=message_ts,
                           response_url=self.api.response_url(f"a{self._n}"))
        return self.post(body)

    def click_home(self, action_id: str, value: str, user: str) -> httpx.Response:
        """Click a button on the App Home tab."""
        return self.post(home_action_body(action_id, value, user=user))

    def submit_view(self, view: dict, user: str) -> httpx.Response:
        """Submit a modal."""
        return self.post(view_submission_body(view, user=user))

    def event(self, event: dict, headers: dict | None = None, event_id: str | None = None) -> httpx.Response:
        """Deliver an Events API callback."""
        body = event_body(event, event_id=event_id)
        return self.post(body, {"Content-Type": "application/json", **(headers or {})})

    @cached_property
    def db(self) -> Database:
        """The bot's own ledger, to look at what it recorded (closed by `stop`)."""
        return Database(self.env["DATABASE_URL"])

    def stop(self) -> None:
        """Terminate the process (and close the ledger handle, if one was opened)."""
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        if "db" in self.__dict__:
            self.__dict__.pop("db").dispose()


# Python that asks Linux to SIGTERM it when the thread that started it dies (PR_SET_PDEATHSIG survives exec), then
# runs its arguments: a bot started by a test or a benchmark never outlives a runner killed mid-run.
_DYING_WITH_US = [sys.executable, "-c", "import ctypes, os, sys; ctypes.CDLL(None).prctl(1, 15); "
                  "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"] if sys.platform == "linux" \
    else [sys.executable]


def start_bot(tmp: Path, config_text: str, api: FakeSlackApi | None = None, extra_env: dict | None = None,
              append_log: bool = False) -> RunningBot:
    """Start `gpubot serve` on a free port and wait for /healthz.

    Starting again with the same `tmp` restarts on the same database; `append_log` keeps the earlier log lines.
    """
    api = api or FakeSlackApi()
    api_url = api.start() if api._server is None else f"{api.base}/api/"
    config = tmp / "gpubot.toml"
    config.write_text(config_text)
    port = int((extra_env or {}).get("GPUBOT_PORT") or free_port())  # a test may need it first (public URL)
    env = {**os.environ, "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": api_url,
           "DATABASE_URL": f"sqlite:///{tmp / 'e2e.db'}", "GPUBOT_CONFIG": str(config),
           "GPUBOT_HOST": "127.0.0.1", "GPUBOT_PORT": str(port), "LOG_LEVEL": "INFO",
           "NO_PROXY": "127.0.0.1,localhost", **(extra_env or {})}
    env.pop("SLACK_APP_TOKEN", None)
    log_path = tmp / "gpubot.log"
    process = subprocess.Popen([*_DYING_WITH_US, "-m", "gpubot", "serve"], env=env, cwd=tmp,
                               stdout=log_path.open("a" if append_log else "w"), stderr=subprocess.STDOUT)
    bot = RunningBot(f"http://127.0.0.1:{port}", api, process, log_path, env)
    try:
        wait_healthy(bot.url, process, log_path)
    except BaseException:
        bot.stop()  # a bot that never became healthy is not left running
        raise
    return bot


@contextmanager
def serving(tmp: Path, config_text: str, **options) -> Iterator[RunningBot]:
    """`start_bot(tmp, config_text, **options)`, stopped together with its fake Slack on the way out."""
    running = start_bot(tmp, config_text, **options)
    try:
        yield running
    finally:
        running.stop()
        running.api.stop()


def wait_healthy(url: str, process: subprocess.Popen, log_path: Path, timeout: float = 90) -> None:
    """Wait until `url`/healthz answers 200; raise with the log tail if the process dies or never does.

    The deadline is generous: the first start in a fresh checkout compiles every module it imports (Google's client
    alone is ~830,000 lines) while the other test workers do the same, and took over 30 s on 2 busy CPUs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited: {log_path.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"never became healthy: {log_path.read_text()[-3000:]}")
