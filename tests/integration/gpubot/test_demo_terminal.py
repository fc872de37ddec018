"""The terminal demo as a person uses it, under a pseudo-terminal: the prompt and its hints and nothing else,
numbered buttons a typed number clicks, a restart that keeps running bookings running (no "lost" instance, no
$0.00 release, no warning over the prompt), history across restarts, one demo per database, and the reports the
banner names, run against the demo's ledger."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from importlib import resources
from pathlib import Path

import pytest

from tests.cli_kit import gpubot
from tests.pty_kit import Terminal, plain

UP = b"\x1b[A"


def _demo(tmp_path: Path, *options: str) -> Terminal:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DATABASE_URL", "GPUBOT_", "CI"))}
    return Terminal([sys.executable, "-m", "gpubot", "demo", "--database", "demo.db", *options], tmp_path, env)


def _demo_policy_reminding_after(tmp_path: Path, reminder: str) -> Path:
    """The built-in demo policy with one expiry reminder, `reminder` before a booking's end."""
    defaults = resources.files("gpubot").joinpath("defaults.toml").read_text(encoding="utf-8")
    policy = tmp_path / "gpubot.toml"
    policy.write_text(f'{defaults}\n[booking]\nexpiry_reminders = ["{reminder}"]\n', encoding="utf-8")
    return policy


@pytest.fixture
def first_run(tmp_path):
    """A demo that booked 2× A100 (#1) and then released another booking (#2) with its numbered button."""
    demo = _demo(tmp_path)
    try:
        prompt = demo.expect("gpubot> ")
        demo.type("/gpu book a100x2 6h")
        after = demo.expect("[1 Extend 1h] [2 Release]", after=prompt)
        demo.type("/gpu book h100 1h")
        after = demo.expect("[1 Extend 1h] [2 Release]", after=after)
        demo.type("2")  # clicks Release on #2, the buttons last shown
        demo.expect("✅ *#2* 1× H100 80GB for 1h — released", after=after)
        demo.type("/gpu status")
        demo.expect("until", after=after)
        demo.type("quit")
        shown = demo.finish()
    finally:
        demo.kill()
    return tmp_path, shown


def test_the_prompt_comes_after_its_hints_only(first_run):
    _tmp, shown = first_run
    before = shown[: shown.index("gpubot> ")].strip().splitlines()
    assert len(before) == 3, before
    assert before[0].startswith("gpubot demo — the simulated cloud and a local ledger (kept in demo.db")
    assert "a number clicks that button" in before[1]
    # `gpubot` when it is on PATH, else where it is installed (make demo's .venv/bin/gpubot): runnable as shown
    command = re.fullmatch(r"Reports on this ledger: (\S+) report cost --database demo\.db \(also digest, export "
                           r"ledger\)\.", before[2]).group(1)
    assert command.endswith("gpubot") and (shutil.which(command) or Path(command).exists()), before[2]


def test_a_restart_keeps_the_running_booking_running_and_remembers_the_history(first_run):
    tmp, _shown = first_run
    demo = _demo(tmp)
    try:
        prompt = demo.expect("gpubot> ")
        demo.keys(UP + b"\r")  # the last line typed before the restart: /gpu status
        status = demo.expect("🟢 *#1* 2× A100 40GB for 6h — active on simulated", after=prompt)
        demo.type("/gpu release 1")
        demo.expect("✅ *#1* 2× A100 40GB for 6h — released on simulated", after=status)
        demo.type("quit")
        shown = demo.finish()
    finally:
        demo.kill()
    restarted = shown[shown.index("gpubot> "):]
    for unwanted in ("no longer runs it", "instance_lost", "message_not_found", "WARNING", "Traceback"):
        assert unwanted not in shown, shown
    assert "$0.00" not in restarted.split("released on simulated")[1].split("gpubot>")[0]  # #1 cost something
    messages = json.loads((tmp / "demo.db.slack.json").read_text())["messages"]["CDEMO"]
    assert any("*#1*" in m["text"] and "released" in m["text"] for m in messages.values())


def test_a_second_demo_on_the_same_database_is_refused_in_one_line(tmp_path):
    demo = _demo(tmp_path)
    try:
        demo.expect("gpubot> ")
        second = gpubot("demo", "--database", "demo.db", cwd=tmp_path, stdin="quit\n")
        demo.type("quit")
        demo.finish()
    finally:
        demo.kill()
    assert second.returncode == 1 and second.stdout == ""
    assert re.fullmatch(r"error: another gpubot demo \(pid \d+\) is using demo\.db; stop it first, or give this one "
                        r"its own database: --database other-demo\.db\n", second.stderr), second.stderr


def test_the_reports_named_in_the_banner_read_the_demos_ledger(first_run):
    tmp, _shown = first_run
    report = gpubot("report", "cost", "--database", "demo.db", "--format", "json", cwd=tmp,
                    env={"DATABASE_URL": f"sqlite:///{tmp / 'other.db'}"})
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["rows"][0]["name"] == "UDEMOADMIN"


def test_make_demo_prints_the_prompt_and_its_hints_only(tmp_path):
    root = Path(__file__).resolve().parents[3]
    venv = Path(sys.prefix)
    installed = venv / ".installed"
    if not installed.exists() or installed.stat().st_mtime < (root / "pyproject.toml").stat().st_mtime:
        pytest.skip("the venv is older than pyproject.toml: make would reinstall first")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DATABASE_URL", "GPUBOT_", "MAKE"))}
    demo = Terminal(["make", "--no-print-directory", "demo", f"VENV={venv}",
                     f"DEMO_ARGS=--database {tmp_path / 'demo.db'}"], root, env)
    try:
        end = demo.expect("gpubot> ")
        demo.type("quit")
        shown = demo.finish()
    finally:
        demo.kill()
    lines = shown[:end].removesuffix("gpubot> ").strip().splitlines()
    assert len(lines) == 3 and lines[0].startswith("gpubot demo — "), lines


def test_a_notice_delivered_in_the_background_is_printed_as_it_arrives_and_its_buttons_click(tmp_path):
    # A reminder 5m50s before the end of a 6-minute booking falls due seconds after it is ready.
    demo = _demo(tmp_path, "--config", str(_demo_policy_reminding_after(tmp_path, "5m50s")))
    try:
        prompt = demo.expect("gpubot> ")
        demo.type("/gpu book a100x1 6m")
        after = demo.expect("[1 Extend 1h] [2 Release]", after=prompt)
        warned = demo.expect("ends in", after=after)  # nothing typed: the follower printed it
        demo.expect("Release now]", after=warned)
        # Numbered from 1 when it came alone, after the booking's buttons when it came in the same burst.
        extend = re.search(r"\[(\d+) Extend 1h\] \[\d+ Release now\]", plain(demo.output)[warned:])
        assert extend, plain(demo.output)[warned:]
        demo.type(extend.group(1))
        demo.expect("now ends", after=warned)
        demo.type("quit")
        demo.finish()
    finally:
        demo.kill()
