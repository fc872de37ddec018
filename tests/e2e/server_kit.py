"""Run `gpubot serve` as a real subprocess against a local Slack Web API (the code lives in
gpubot/sandbox/process.py, shared with the benchmarks), write its config (`config`, `sim`, `offer`), and wait for
what it says to Slack."""

from __future__ import annotations

import atexit
import json
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import httpx
from gpubot.db import bookings as booking_repo
from gpubot.db.tables.delivery import InboxRow, OutboxRow
from sqlalchemy import func, select

from gpubot.sandbox import process
from gpubot.sandbox.process import BOT_TOKEN, SECRET, RunningBot, free_port
from tests.databases import sqlite_url

__all__ = [
    "BOT_TOKEN",
    "SECRET",
    "RunningBot",
    "agent_line",
    "agent_token",
    "as_shown",
    "config",
    "dm",
    "free_port",
    "inbox_rows",
    "job_runs",
    "offer",
    "serving",
    "settle",
    "sim",
    "start_bot",
    "wait_call",
    "wait_job_runs",
    "wait_live",
]


@cache
def _template_dir() -> Path:
    """Where this test process keeps its migrated SQLite template (tests/databases.py), removed at exit."""
    directory = Path(tempfile.mkdtemp(prefix="gpubot-e2e-template-"))
    atexit.register(shutil.rmtree, directory, True)
    return directory


def _migrated_ledger(tmp: Path, extra_env: dict | None) -> None:
    """Put a copy of the run's migrated ledger where `gpubot serve` will look (tmp/e2e.db), unless the test names
    its own database or restarts on one: migrating a fresh file cost each start ~0.25 s of CPU (about 100 starts a
    run). Migrating at start-up is the subject of tests/integration/gpubot/test_startup.py and
    tests/reliability/test_health.py, which start on fresh ledgers of their own."""
    if "DATABASE_URL" not in (extra_env or {}) and not (tmp / "e2e.db").exists():
        sqlite_url(tmp, _template_dir(), "e2e.db")


def start_bot(tmp: Path, config_text: str, api=None, extra_env: dict | None = None, **options) -> RunningBot:
    """`gpubot serve` on a free port (gpubot/sandbox/process.py), on a migrated ledger in `tmp` unless the test
    names its own in `extra_env`."""
    _migrated_ledger(tmp, extra_env)
    return process.start_bot(tmp, config_text, api, extra_env, **options)


@contextmanager
def serving(tmp: Path, config_text: str, **options) -> Iterator[RunningBot]:
    """`start_bot(tmp, config_text, **options)`, stopped together with its fake Slack on the way out."""
    _migrated_ledger(tmp, options.get("extra_env"))
    with process.serving(tmp, config_text, **options) as running:
        yield running


def offer(gpu: str = "a100", region: str = "sim-1", count: int = 8, price: float = 2.0, **more: object) -> dict:
    """One entry of a simulated cloud's stock: `count` `gpu`s in `region` at `price` per GPU-hour (and `more`,
    such as spot_price or max_cuda)."""
    return {"gpu": gpu, "region": region, "count": count, "price": price, **more}


def sim(*stock: dict, **options: object) -> dict:
    """A simulated cloud's section: its `stock` (`offer`s; 8 a100 in sim-1 at $2.00 when none) and `options`."""
    return {"kind": "simulated", **options, "stock": list(stock) or [offer()]}


def config(*, alerts: bool = False, **sections: dict | None) -> str:
    """The TOML `gpubot serve` reads: [team] with the admin UADMIN (and the alerts channel CALERTS when `alerts`),
    one simulated cloud `sim` (see `sim`), and each section given (`providers={"name": {...}}` replaces the clouds;
    `team` adds to its defaults; a section given None is left out)."""
    team = {"admins": ["UADMIN"], **({"alerts_channel": "CALERTS"} if alerts else {}),
            **(sections.pop("team", None) or {})}
    merged = {"team": team, **sections, "providers": sections.get("providers", {"sim": sim()})}
    return "\n".join(_table(name, values) for name, values in merged.items() if values is not None)


def _table(name: str, values: dict) -> str:
    """`[name]` with its keys (no header for a table of tables only), then each table inside it as `[name.key]`."""
    scalars = [f"{_key(key)} = {_toml(value)}" for key, value in values.items()
               if value is not None and not isinstance(value, dict)]
    inner = [_table(f"{name}.{_key(key)}", value) for key, value in values.items() if isinstance(value, dict)]
    return "\n".join(([f"[{name}]", *scalars, ""] if scalars or not inner else []) + inner)


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _toml(value: object) -> str:
    """A TOML value: strings quoted, lists and (inline) tables written out."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(str(value), ensure_ascii=False)


def wait_live(url: str, process, log_path, timeout: float = 30) -> None:
    """In place of the sandbox's `wait_healthy`, for a bot meant to start not ready: wait for /livez only (then
    poll /readyz's `started`)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/livez", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline and process.poll() is None, log_path.read_text()[-3000:]
        time.sleep(0.05)


def wait_call(bot: RunningBot, method: str, *needles: str, timeout: float = 30) -> dict:
    """The arguments of the newest Slack Web API call `method` whose arguments mention every needle."""
    found: list = []

    def seen(calls) -> bool:
        found[:] = [c for c in calls if c.method == method and all(n in json.dumps(c.args, ensure_ascii=False)
                                                                     for n in needles)]
        return bool(found)

    assert bot.api.wait_for(seen, timeout), f"no {method} with {needles}"
    return found[-1].args


def as_shown(text: str) -> str:
    """Message text as a Slack client shows it: its three escapes (`&amp;`, `&lt;`, `&gt;`) as the characters."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def dm(bot: RunningBot, user: str, needle: str, timeout: float = 20) -> str:
    """The text of the newest message to `user` that contains `needle` (waiting for it up to `timeout`)."""
    found: list[str] = []

    def seen(calls) -> bool:
        found[:] = [c.args["text"] for c in calls if c.method == "chat.postMessage"
                    and c.args.get("channel") == user and needle in c.args.get("text", "")]
        return bool(found)

    assert bot.api.wait_for(seen, timeout), f"no message to {user} with {needle!r}"
    return found[-1]


def agent_line(bot: RunningBot, user: str, label: str = "", timeout: float = 30) -> str:
    """The line that starts the agent by hand, as Slack shows it (copyable), from the no-telemetry DM to `user`
    (about booking `label`, `#7`, when given): the bot sends it once nothing arrived by
    `health.telemetry_stale_after` after the machine became reachable."""
    text = as_shown(dm(bot, user, f"{label} has sent no GPU telemetry" if label else "has sent no GPU telemetry",
                       timeout))
    found = re.search(r"starts it: `(.+?)`", text)
    assert found, f"no agent line in {text!r}"
    return found.group(1)


def agent_token(bot: RunningBot, user: str, label: str = "", timeout: float = 30) -> str:
    """The agent token of that line (see `agent_line`)."""
    return re.search(r"GPUBOT_AGENT_TOKEN=(\S+) ", agent_line(bot, user, label, timeout)).group(1)


def inbox_rows(bot: RunningBot) -> int:
    """How many signed commands and interactions the bot has recorded (a refused request never is)."""
    with bot.db.inbox.session() as session:
        return session.execute(select(func.count()).select_from(InboxRow)).scalar_one()


def settle(bot: RunningBot, timeout: float = 30) -> None:
    """Wait until the bot has finished the work of every request it recorded and has handed Slack every notice it
    owes: after this, what a request made happen has reached the fake Slack, so what has not cannot come later.
    (A test that asserts that nothing happened reads the fake's calls after this, never after a sleep.) An Events
    API event has no inbox ticket, so this does not wait for its listener: wait on the listener's own effect."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with bot.db.inbox.session() as session:
            working = session.execute(select(func.count()).select_from(InboxRow)
                                      .where(InboxRow.done_at.is_(None))).scalar_one()
        with bot.db.session() as session:
            owed = session.execute(select(func.count()).select_from(OutboxRow)
                                   .where(OutboxRow.delivered_at.is_(None), OutboxRow.failed_at.is_(None))).scalar_one()
        if not working and not owed:
            return
        time.sleep(0.02)
    raise AssertionError(f"the bot did not settle in {timeout} s: {working} requests working, {owed} notices owed")


def job_runs(bot: RunningBot, job: str) -> int:
    """How many times the scheduled `job` has run on the bot (gpubot_job_runs_total, every outcome)."""
    text = httpx.get(f"{bot.url}/metrics", timeout=10).text
    return sum(int(float(n)) for n in re.findall(rf'^gpubot_job_runs_total{{[^}}]*job="{job}"[^}}]*}} (\S+)$', text,
                                                 re.MULTILINE))


def wait_job_runs(bot: RunningBot, job: str, more: int, timeout: float = 30) -> None:
    """Wait until `job` has run `more` more times than now: a later event the tests can wait for."""
    target = job_runs(bot, job) + more
    deadline = time.monotonic() + timeout
    while job_runs(bot, job) < target:
        assert time.monotonic() < deadline, f"{job} did not run {more} more times in {timeout} s"
        time.sleep(0.05)


def booking_of(bot: RunningBot, label: str):
    """The booking `label` (`#7`) as the ledger holds it now."""
    with bot.db.session() as session:
        return booking_repo.get_booking(int(label.lstrip("#")), session=session)


def until(check, seconds: float = 30):
    """Poll `check` until it answers something truthy (returned), failing after `seconds`."""
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, f"not within {seconds:g}s"
        time.sleep(0.1)
    return found


def owned_booking_ids(bot: RunningBot, owner: str) -> set[int]:
    """The ids of every booking `owner` has made on the bot."""
    with bot.db.session() as session:
        return {booking.id for booking in booking_repo.list_bookings(session=session, owner=owner)}


def book(bot: RunningBot, owner: str, request: str, timeout: float = 10, **options) -> str:
    """`/gpu book <request>` as `owner`; the label (`#7`) of the booking it made. Tests that share one bot run in
    any order (pytest-randomly), so none may assume which number its booking gets."""
    before = owned_booking_ids(bot, owner)
    assert bot.command(f"book {request}", user=owner, **options).status_code == 200
    deadline = time.monotonic() + timeout
    while not (made := owned_booking_ids(bot, owner) - before):
        assert time.monotonic() < deadline, f"`/gpu book {request}` by {owner} made no booking in {timeout} s"
        time.sleep(0.02)
    return f"#{max(made)}"
