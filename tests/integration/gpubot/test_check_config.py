"""`gpubot check-config`: every problem at once, each naming what to fix; `--online` against the providers' faithful
HTTP fakes (answering 401 and 403), the fake Slack Web API (answering invalid_auth and not_allowed_token_type), and
real databases."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from gpubot.db.database import alembic_config

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.cli_kit import gpubot, gpubot_process
from tests.fakes.lambda_api import FakeLambda
from tests.fakes.runpod_api import FakeRunPod

GOOD_SECRET = "8f14e45fceea167a5a36dedd4bea2543"  # 32 hexadecimal characters, like Slack's
PROVIDERS = '[providers.lam]\nkind = "lambda"\n[providers.rp]\nkind = "runpod"\n'


def _lines(ran, prefix: str) -> list[str]:
    return [line for line in ran.stderr.splitlines() if line.startswith(prefix)]


def test_every_policy_problem_is_reported_at_once_each_on_its_own_key(tmp_path):
    (tmp_path / "gpubot.toml").write_text(
        '[team]\ncurrency = "usd"\n[idle]\nfor = "ten minutes"\n'
        '[providers.lambda]\nkind = "lambda"\nregion = ["us-east-1"]\n'
        '[providers.sim]\nkind = "simulated"\nstock = [{ gpu = "a100", regoin = "a-1", count = 8, price = 1.5 }]\n')
    ran = gpubot("check-config", "--config", "gpubot.toml", cwd=tmp_path)
    assert ran.returncode == 2
    assert "gpubot.toml — 4 problems" in ran.stdout
    errors = _lines(ran, "error: config ")
    assert [e.split(":")[1].split()[-1] for e in errors] == [
        "providers.lambda.region", "providers.sim.stock.0.regoin", "team.currency", "idle.for"]
    assert "did you mean 'regions'?" in errors[0]  # the key that exists there, never the key itself
    assert "did you mean 'region'?" in errors[1]
    assert "three-letter ISO 4217 code in capitals, such as 'USD'" in errors[2]
    assert "providers.lambda.currency" not in ran.stderr


def test_a_misspelt_key_with_no_near_key_gets_no_guess(tmp_path):
    (tmp_path / "gpubot.toml").write_text('[providers.sim]\nkind = "simulated"\nregion = "a-1"\nzzz = 1\n')
    ran = gpubot("check-config", "--config", "gpubot.toml", cwd=tmp_path)
    region, zzz = _lines(ran, "error: config ")
    assert "did you mean 'regions'?" in region and "did you mean" not in zzz


def test_the_slack_secrets_kind_and_shape_are_checked_offline_without_printing_them(tmp_path):
    (tmp_path / "gpubot.toml").write_text('[providers.sim]\nkind = "simulated"\n')
    env = {"SLACK_BOT_TOKEN": "xapp-1-A111-222-secretvalue", "SLACK_SIGNING_SECRET": "abcde",
           "PAGERDUTY_ROUTING_KEY": "short-key"}
    ran = gpubot("check-config", cwd=tmp_path, env=env)
    assert ran.returncode == 1
    assert _lines(ran, "error: SLACK_BOT_TOKEN: an app-level token (xapp-…) where the bot token (xoxb-…) belongs")
    assert _lines(ran, "error: SLACK_SIGNING_SECRET: 5 characters, but Slack's signing secrets are 32 hexadecimal")
    assert _lines(ran, "warning: PAGERDUTY_ROUTING_KEY: 9 characters")
    assert not any(value in ran.stdout + ran.stderr for value in env.values())
    good = gpubot("check-config", cwd=tmp_path, env={"SLACK_BOT_TOKEN": "xoxb-1-2-3",
                                                     "SLACK_SIGNING_SECRET": GOOD_SECRET})
    assert good.returncode == 0 and good.stderr == "", good.stderr
    socket = gpubot("check-config", cwd=tmp_path, env={"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2"})
    assert _lines(socket, "error: SLACK_APP_TOKEN: not an app-level token") and "SIGNING" not in socket.stderr


@pytest.fixture
def clouds():
    """Lambda and RunPod fakes, Slack's fake Web API, started; stopped after."""
    fakes = FakeLambda("lambda-good-key"), FakeRunPod("runpod-good-key"), FakeSlackApi()
    urls = [fake.start() for fake in fakes]
    yield {"lambda": fakes[0], "runpod": fakes[1], "slack": fakes[2],
           "env": {"LAMBDA_API_KEY": "lambda-good-key", "LAMBDA_API_URL": f"{urls[0]}/api/v1",
                   "RUNPOD_API_KEY": "runpod-good-key", "RUNPOD_API_URL": f"{urls[1]}/v2",
                   "SLACK_API_URL": urls[2], "SLACK_BOT_TOKEN": "xoxb-good", "SLACK_SIGNING_SECRET": GOOD_SECRET,
                   "GPUBOT_PUBLIC_URL": "https://127.0.0.1:1"}}
    for fake in fakes:
        fake.stop()


def test_online_reaches_every_provider_slack_and_the_database(tmp_path, clouds, database_url):
    (tmp_path / "gpubot.toml").write_text(PROVIDERS)
    ran = gpubot("check-config", "--online", cwd=tmp_path, env={**clouds["env"], "DATABASE_URL": database_url})
    assert "provider lam (lambda): reached, 0 gpubot machine(s) running" in ran.stdout
    assert "provider rp (runpod): reached, 0 gpubot machine(s) running" in ran.stdout
    assert "slack auth.test: ok — bot UBOT in workspace Fake" in ran.stdout
    assert "(the newest)" in ran.stdout
    assert ran.stderr.splitlines() == [line for line in ran.stderr.splitlines() if line.startswith("warning: ")]
    assert _lines(ran, "warning: GPUBOT_PUBLIC_URL: https://127.0.0.1:1/agent/gpubot-agent.py cannot be reached")
    assert ran.returncode == 0, ran.stderr  # nothing that would stop a booking
    assert [c.method for c in clouds["slack"].calls] == ["auth.test"]


def test_online_reports_every_refusal_at_once_each_with_its_variable(tmp_path, clouds):
    (tmp_path / "gpubot.toml").write_text(PROVIDERS)
    (tmp_path / "corrupt.db").write_bytes(b"not a database " * 100)
    clouds["slack"].invalid_tokens.add("xoxb-revoked")
    env = {**clouds["env"], "LAMBDA_API_KEY": "secret_bogus", "RUNPOD_API_KEY": "bogus",
           "SLACK_BOT_TOKEN": "xoxb-revoked", "DATABASE_URL": "sqlite:///corrupt.db"}
    ran = gpubot("check-config", "--online", cwd=tmp_path, env=env)
    assert ran.returncode == 1
    assert _lines(ran, "error: LAMBDA_API_KEY: provider lam refused the credentials: API key was invalid")  # 401
    assert _lines(ran, "error: RUNPOD_API_KEY: provider rp refused the credentials")  # 401
    assert _lines(ran, "error: SLACK_BOT_TOKEN: Slack refused it (invalid_auth")
    assert _lines(ran, "error: DATABASE_URL: database sqlite:///corrupt.db cannot be used: DatabaseError")
    assert _lines(ran, "error: providers: no provider answered: nothing could be booked")
    assert "secret_bogus" not in ran.stdout + ran.stderr
    assert "provider lam (lambda): configured\n" in ran.stdout  # the call's line below it says what it found


def test_offline_a_cloud_key_is_configured_not_usable(tmp_path, clouds):
    """Without --online nothing has tried the key: the line says so and sends the reader to --online."""
    (tmp_path / "gpubot.toml").write_text(PROVIDERS)
    env = {**clouds["env"], "LAMBDA_API_KEY": "secret_bogus"}
    ran = gpubot("check-config", cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stderr
    assert "provider lam (lambda): configured — credentials not tried (check-config --online calls it)" in ran.stdout
    assert "usable" not in ran.stdout and clouds["lambda"].requests == []


def test_online_names_an_inactive_account_and_an_app_token_slack_refuses(tmp_path, clouds):
    (tmp_path / "gpubot.toml").write_text('[providers.lam]\nkind = "lambda"\n')
    clouds["lambda"].account_inactive = True  # 403 global/account-inactive
    env = {**clouds["env"], "SLACK_BOT_TOKEN": "xapp-1-A111-222-abc", "DATABASE_URL": "sqlite:///nosuch.db"}
    ran = gpubot("check-config", "--online", cwd=tmp_path, env=env)
    assert ran.returncode == 1
    assert _lines(ran, "error: LAMBDA_API_KEY: provider lam refused the credentials: Your account is inactive")
    assert _lines(ran, "error: SLACK_BOT_TOKEN: Slack refused its kind (not_allowed_token_type)")
    assert "database: no ledger at sqlite:///nosuch.db" in ran.stdout  # serve would create it: not a problem
    assert not (tmp_path / "nosuch.db").exists()


def test_online_says_how_many_migrations_the_database_is_behind(tmp_path, clouds, empty_database_url):
    (tmp_path / "gpubot.toml").write_text('[providers.sim]\nkind = "simulated"\n')
    config = alembic_config(empty_database_url)
    scripts = ScriptDirectory.from_config(config)
    two_behind = scripts.get_revision(scripts.get_revision(scripts.get_current_head()).down_revision).down_revision
    command.upgrade(config, two_behind)
    ran = gpubot("check-config", "--online", cwd=tmp_path, env={**clouds["env"], "DATABASE_URL": empty_database_url})
    assert f"at migration {two_behind}, 2 behind the newest" in ran.stdout and ran.returncode == 0, ran.stderr


def test_the_installed_entry_point_exits_1_on_a_refused_key(tmp_path, clouds):
    (tmp_path / "gpubot.toml").write_text('[providers.lam]\nkind = "lambda"\n')
    env = {**clouds["env"], "LAMBDA_API_KEY": "wrong", "DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"}
    ran = gpubot_process("check-config", "--online", cwd=tmp_path, env=env)
    assert ran.returncode == 1 and "error: LAMBDA_API_KEY: provider lam refused the credentials" in ran.stderr


def test_online_calls_nothing_for_the_team_pool_and_says_so(tmp_path, clouds, database_url):
    """The pool has no API: its line says so (it once reported the pool unreachable, an AttributeError from a
    listing made without a ledger); with every cloud refusing, the pool can still take bookings."""
    pool = ('[providers.lab]\nkind = "pool"\nmachines = [{ host = "gpu-box-1", gpu = "a100", gpus = 4, '
            'region = "office", monthly_cost = 1000 }]\n')
    (tmp_path / "gpubot.toml").write_text(pool + '[providers.lam]\nkind = "lambda"\n')
    env = {**clouds["env"], "LAMBDA_API_KEY": "secret_bogus", "DATABASE_URL": database_url}
    ran = gpubot("check-config", "--online", cwd=tmp_path, env=env)
    assert ("provider lab (pool): nothing to call — the team's own machines, as the config lists them; who holds "
            "their GPUs is read from the ledger") in ran.stdout
    assert "AttributeError" not in ran.stdout + ran.stderr and "providers.lab" not in ran.stderr
    assert _lines(ran, "error: LAMBDA_API_KEY: provider lam refused the credentials")
    assert not _lines(ran, "error: providers: no provider answered")
