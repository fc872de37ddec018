"""/readyz and /metrics over HTTP say which providers answer: `gpubot_provider_up` from each provider's last call,
/readyz naming the ones down and staying ready while another can book."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.e2e.server_kit import serving
from tests.fakes.lambda_api import FakeLambda

CONFIG = """
[scheduler]
reconcile_every = "1s"

[providers.lam]
kind = "lambda"
{sim}
"""
SIM = '[providers.sim]\nkind = "simulated"\nstock = [{ gpu = "a100", region = "sim-1", count = 8, price = 2.0 }]\n'


def _until(condition, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _up(url: str, provider: str) -> float | None:
    found = re.search(rf'^gpubot_provider_up{{provider="{provider}"}} (\S+)$', httpx.get(f"{url}/metrics").text,
                      re.M)
    return float(found.group(1)) if found else None


@pytest.fixture
def lambda_cloud():
    """A Lambda fake with its key, stopped after the test."""
    fake = FakeLambda("lambda-reach-key")
    url = fake.start()
    yield fake, {"LAMBDA_API_KEY": "lambda-reach-key", "LAMBDA_API_URL": f"{url}/api/v1"}
    fake.stop()


def test_a_provider_down_is_named_while_another_can_book(tmp_path, lambda_cloud):
    fake, env = lambda_cloud
    with serving(tmp_path, CONFIG.format(sim=SIM), extra_env=env) as bot:
        assert _until(lambda: _up(bot.url, "lam") == 1.0)
        ready = httpx.get(f"{bot.url}/readyz")
        assert ready.status_code == 200 and ready.json()["providers_down"] == {}
        fake.account_inactive = True  # Lambda answers 403 global/account-inactive from now on
        assert _until(lambda: _up(bot.url, "lam") == 0.0)
        ready = httpx.get(f"{bot.url}/readyz")
        assert ready.status_code == 200 and ready.json()["providers"] is True  # the simulated cloud still books
        assert ready.json()["providers_down"] == {"lam": "Your account is inactive."}
        fake.account_inactive = False
        assert _until(lambda: _up(bot.url, "lam") == 1.0)
        assert httpx.get(f"{bot.url}/readyz").json()["providers_down"] == {}


def test_not_ready_while_no_provider_answers(tmp_path, lambda_cloud):
    fake, env = lambda_cloud
    with serving(tmp_path, CONFIG.format(sim=""), extra_env=env) as bot:
        assert _until(lambda: _up(bot.url, "lam") == 1.0)
        fake.inject("refuse", times=10_000)  # every connection to Lambda is dropped from now on
        assert _until(lambda: httpx.get(f"{bot.url}/readyz").status_code == 503, timeout=60)
        answer = httpx.get(f"{bot.url}/readyz").json()
        assert answer["providers"] is False and list(answer["providers_down"]) == ["lam"]
        assert answer["database"] is True and answer["scheduler"] is True
