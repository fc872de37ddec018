"""`gpubot serve` and `check-config` start-up failures (issue #20), each a real process: one clear line, the
right exit code, no traceback; the one line serve says when it serves, and the one it says when a signal stops it."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from tests.cli_kit import Ran, gpubot, gpubot_process
from tests.e2e.server_kit import free_port

SECRETS = {"SLACK_BOT_TOKEN": "xoxb-startup-test", "SLACK_SIGNING_SECRET": "8f14e45fceea167a5a36dedd4bea2543"}
POLICY = '[providers.sim]\nkind = "simulated"\nstock = [{ gpu = "a100", region = "sim-1", count = 8, price = 2.0 }]\n'


def _serve_env(tmp_path, **extra: str) -> dict:
    (tmp_path / "gpubot.toml").write_text(POLICY)
    return {**SECRETS, "GPUBOT_CONFIG": str(tmp_path / "gpubot.toml"), "GPUBOT_HOST": "127.0.0.1",
            "GPUBOT_PORT": str(free_port()), "DATABASE_URL": f"sqlite:///{tmp_path / 'ledger.db'}", **extra}


def _one_error_line(result: Ran) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr
    return lines[0]


def test_serve_with_an_explicit_config_that_does_not_exist_names_it(tmp_path):
    missing = "/path/that/does/not/exist.toml"
    result = gpubot_process("serve", cwd=tmp_path, env=_serve_env(tmp_path, GPUBOT_CONFIG=missing))
    assert result.returncode == 2
    assert "/path/that/does/not/exist.toml" in _one_error_line(result) and "GPUBOT_CONFIG" in result.stderr


def test_check_config_with_a_config_that_does_not_exist_is_not_valid(tmp_path):
    result = gpubot("check-config", "--config", "nonexistent.toml", cwd=tmp_path)
    assert result.returncode == 2 and "valid" not in result.stdout
    assert "nonexistent.toml" in _one_error_line(result)


def test_serve_lists_every_missing_secret_at_once(tmp_path):
    env = {k: v for k, v in _serve_env(tmp_path).items() if k not in SECRETS}
    line = _one_error_line(result := gpubot_process("serve", cwd=tmp_path, env=env))
    assert result.returncode == 2 and "SLACK_BOT_TOKEN" in line and "SLACK_SIGNING_SECRET" in line


def test_a_corrupt_database_is_one_line(tmp_path):
    (tmp_path / "ledger.db").write_bytes(b"this is not a database file at all" * 200)
    result = gpubot_process("serve", cwd=tmp_path, env=_serve_env(tmp_path))
    assert result.returncode == 1 and "ledger.db" in (line := _one_error_line(result))
    assert "not a database" in line


def test_an_unreachable_database_is_one_line(tmp_path):
    url = f"postgresql+psycopg://gpubot@127.0.0.1:{free_port()}/gpubot"
    result = gpubot_process("serve", cwd=tmp_path, env=_serve_env(tmp_path, DATABASE_URL=url))
    assert result.returncode == 1 and "cannot be used" in _one_error_line(result)


def test_a_busy_port_is_the_first_and_only_line(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = gpubot_process("serve", cwd=tmp_path, env=_serve_env(tmp_path, GPUBOT_PORT=str(port)))
    assert result.returncode == 1 and f"127.0.0.1:{port}" in _one_error_line(result)
    assert result.stdout == ""


def test_check_config_suggests_the_key_meant(tmp_path):
    (tmp_path / "typo.toml").write_text('[team]\ncurency = "EUR"\n')
    result = gpubot("check-config", "--config", "typo.toml", cwd=tmp_path, env=SECRETS)
    assert result.returncode == 2 and "did you mean 'currency'" in _one_error_line(result)


def test_serve_says_where_it_listens_with_which_policy_and_providers(tmp_path):
    env = _serve_env(tmp_path)
    url = f"http://127.0.0.1:{env['GPUBOT_PORT']}"
    process = subprocess.Popen([sys.executable, "-m", "gpubot", "serve"], cwd=tmp_path, stderr=subprocess.PIPE,
                               text=True, env={**gpubot_env(), **env})
    try:
        line = next(line for line in process.stderr if "serving on" in line)
        assert url in line and env["GPUBOT_CONFIG"] in line and "providers usable: sim" in line
        assert httpx.get(f"{url}/livez", timeout=5).status_code == 200
    finally:
        process.terminate()
        process.wait(10)


def gpubot_env() -> dict:
    """The environment `gpubot()` runs with (the host's, minus Slack and provider secrets)."""
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "AUTODL_", "LAMBDA_", "RUNPOD_"))}


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_serve_cleanly_in_one_line_with_a_quiet_start(tmp_path, stop):
    env = _serve_env(tmp_path)
    url = f"http://127.0.0.1:{env['GPUBOT_PORT']}"
    process = subprocess.Popen([sys.executable, "-m", "gpubot", "serve"], cwd=tmp_path, stderr=subprocess.PIPE,
                               text=True, env={**gpubot_env(), **env})
    try:
        deadline = time.monotonic() + 60
        while not _ready(url):
            assert process.poll() is None and time.monotonic() < deadline, "serve never became ready"
            time.sleep(0.05)
        process.send_signal(stop)
        err = process.communicate(timeout=30)[1]
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    lines = err.splitlines()
    stopped = [line for line in lines if "stopped" in line]
    assert len(stopped) == 1 and f"gpubot stopped ({stop.name})" in stopped[0] == lines[-1], err
    assert not any("alembic" in line for line in lines), err  # no plugin set-up, no line per migration
    assert any("database at migration" in line and "migrated from an empty database" in line for line in lines)


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_serve_refuses_an_app_token_where_the_bot_token_belongs(tmp_path):
    env = _serve_env(tmp_path, SLACK_BOT_TOKEN="xapp-1-A111-222-secretvalue")
    result = gpubot_process("serve", cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert "SLACK_BOT_TOKEN: an app-level token (xapp-…) where the bot token (xoxb-…) belongs" in \
        _one_error_line(result)
    assert "secretvalue" not in result.stderr
