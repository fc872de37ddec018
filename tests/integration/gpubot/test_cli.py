"""The `gpubot` command line: in this process through its real app object, and as the installed entry point
(`python -m gpubot`) for the smoke tests that are about the process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_kit import gpubot, gpubot_process

ROOT = Path(__file__).parents[3]
COMMANDS = ["serve", "demo", "db", "db upgrade", "db current", "check-config", "version"]
SLACK = {"SLACK_BOT_TOKEN": "xoxb-cli-test", "SLACK_SIGNING_SECRET": "8f14e45fceea167a5a36dedd4bea2543"}


def test_help_lists_every_command(tmp_path):
    out = gpubot_process("--help", cwd=tmp_path).stdout
    for name in ("serve", "demo", "db", "check-config", "version"):
        assert name in out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command, tmp_path):
    result = gpubot(*command.split(), "--help", cwd=tmp_path)
    assert result.returncode == 0 and "Usage" in result.stdout


def test_version(tmp_path):
    assert gpubot_process("version", cwd=tmp_path).stdout.strip() == "0.1.0"


def test_check_config_passes_on_the_example(tmp_path):
    result = gpubot_process("check-config", "--config", str(ROOT / "gpubot.example.toml"), cwd=tmp_path, env=SLACK)
    assert result.returncode == 0, result.stderr
    assert "valid" in result.stdout
    assert "provider simulated (simulated): usable" in result.stdout
    assert "provider lambda (lambda): disabled" in result.stdout


def test_check_config_says_why_a_provider_is_unusable(tmp_path):
    config = tmp_path / "gpubot.toml"
    config.write_text('[providers.lambda]\nkind = "lambda"\n[providers.sim]\nkind = "simulated"\n')
    result = gpubot("check-config", "--config", str(config), cwd=tmp_path)
    assert "provider lambda (lambda): not usable: LAMBDA_API_KEY is not set" in result.stdout


@pytest.mark.parametrize(("url", "warning"), [
    ("", "cannot reach this address"), ("http://gpubot.example.com", "not HTTPS"),
    ("https://gpubot.example.com", None)])
def test_check_config_says_whether_rented_machines_can_fetch_the_agent(tmp_path, url, warning):
    config = tmp_path / "gpubot.toml"
    config.write_text('[providers.lam]\nkind = "lambda"\n')
    out = gpubot("check-config", "--config", str(config), cwd=tmp_path, env={"GPUBOT_PUBLIC_URL": url}).stdout
    line = next(line for line in out.splitlines() if line.startswith("public URL: "))
    assert (warning in line) if warning else "WARNING" not in line


def test_check_config_names_the_bad_key(tmp_path):
    config = tmp_path / "gpubot.toml"
    config.write_text('[idle]\nfor = "ten minutes"\n')
    result = gpubot("check-config", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 2
    assert "idle.for" in result.stderr and "ten minutes" in result.stderr and "2h30m" in result.stderr
    assert "Traceback" not in result.stderr


def test_one_file_serves_the_bot_and_the_replay_and_its_replay_table_is_checked(tmp_path):
    config = tmp_path / "gpubot.toml"
    sim = '[providers.sim]\nkind = "simulated"\nstock = [{ gpu = "a100", region = "r", count = 8, price = 2.0 }]\n'
    config.write_text(sim + "[replay]\nover_booking = 1.25\n[replay.policies.lean]\nidle = { grace = \"10m\" }\n")
    assert gpubot("check-config", "--config", str(config), cwd=tmp_path, env=SLACK).returncode == 0
    config.write_text(sim + "[replay]\nover_bookin = 1.25\n")
    result = gpubot("check-config", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 2 and "replay.over_bookin" in result.stderr and "Traceback" not in result.stderr


def test_check_config_refuses_invalid_toml(tmp_path):
    config = tmp_path / "gpubot.toml"
    config.write_text("[team\n")
    result = gpubot("check-config", "--config", str(config), cwd=tmp_path)
    assert result.returncode == 2 and "valid TOML" in result.stderr


def test_db_upgrade_brings_an_empty_database_to_head(tmp_path):
    result = gpubot("db", "upgrade", cwd=tmp_path, env={"DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"})
    assert result.returncode == 0 and "head" in result.stdout
    assert (tmp_path / "x.db").exists()


def test_every_command_that_uses_the_database_takes_database(tmp_path):
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'from-env.db'}"}
    upgraded = gpubot("db", "upgrade", "--database", "given.db", cwd=tmp_path, env=env)
    assert upgraded.returncode == 0 and (tmp_path / "given.db").exists() and not (tmp_path / "from-env.db").exists()
    checked = gpubot("check-config", "--database", "postgresql+psycopg://u:secret@db:5432/gpubot", cwd=tmp_path,
                     env=env)
    assert "database: postgresql+psycopg://db:5432/gpubot" in checked.stdout
    for command in ("serve", "demo", "db upgrade", "check-config", "report cost", "export ledger", "digest"):
        assert "--database" in gpubot(*command.split(), "--help", cwd=tmp_path).stdout, command


def test_serve_refuses_to_run_without_a_signing_secret(tmp_path):
    result = gpubot_process("serve", cwd=tmp_path, env={"SLACK_BOT_TOKEN": "xoxb-1"})
    assert result.returncode == 2 and "SLACK_SIGNING_SECRET" in result.stderr


def test_demo_answers_help_and_books_on_the_simulated_cloud(tmp_path):
    lines = "/gpu help\n/gpu book a100x4 6h\n/gpu status\n/gpu book a10o\nquit\n"
    result = gpubot_process("demo", cwd=tmp_path, stdin=lines)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "/gpu book a100x4 6h" in out                       # the help text
    assert "#1" in out and "active on simulated" in out        # the booking landed
    assert "is ready" in out and "ssh " in out                 # the owner's DM
    assert "did you mean `a100`" in out


def test_gpubot_agent_runs_the_served_agent_code_until_the_booking_ends(tmp_path):
    from tests.fakes.gpubot_agent_host import AgentHost
    from tests.fakes.machine import Machine

    host, machine = AgentHost(), Machine()
    host.start()
    try:
        host.launch("gpa_cli_token")
        (tmp_path / "token").write_text("gpa_cli_token\n")
        agent = subprocess.Popen([sys.executable, "-m", "gpubot", "agent", "--url", host.url, "--token-file",
                                  str(tmp_path / "token"), "--interval", "1s"], cwd=tmp_path, text=True,
                                 stderr=subprocess.PIPE,
                                 env={**os.environ, "PATH": f"{machine.bin}:{os.environ['PATH']}", "NO_PROXY": "*"})
        deadline = time.monotonic() + 30
        while len(host.pushes_of("gpa_cli_token")) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        host.tokens.clear()  # the booking ended: gpubot answers 401
        assert agent.wait(30) == 0
        assert len(host.pushes_of("gpa_cli_token")) >= 2
        assert "booking ended" in agent.stderr.read()
    finally:
        host.stop()
        machine.remove()
