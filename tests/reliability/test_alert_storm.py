"""The pager storm of issue #27, measured against `gpubot serve`: an 8-GPU booking whose temperature flaps between
95 °C and 60 °C at every push (one a second, the agent interval). Counted: PagerDuty triggers and resolves (a fake
Events API), alerts-channel posts, on-call DMs and owner messages (the fake Slack). Undamped settings reproduce the
storm; the defaults and a zero `for` show the damping (domain/alerting.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.server_kit import agent_token, config, dm, serving, settle, sim
from tests.fakes.pagerduty_api import FakePagerDuty
from tests.reliability.figures import record, size

pytestmark = pytest.mark.slow  # a long module: its xdist group is handed out first (tests/conftest.py)


def _config(damping: dict) -> str:
    """Eight GPUs to flap on, paging on-call through the alerts channel, with `damping` in [health]."""
    return config(alerts=True, team={"oncall": ["UONC1", "UONC2"]},
                  idle={"for": "4s"},  # an agent interval of 1 s: one sample per GPU a second
                  # the DM with the agent's line (and its token) comes 2 s after ready
                  health={"max_temp_c": 85, "telemetry_stale_after": "2s", **damping},
                  scheduler={"tick": "1s"}, providers={"sim": sim(telemetry=False)})

UNDAMPED = {"for": "0s", "hysteresis_c": 0, "resolve_for": "0s", "min_open": "0s", "max_pages_per_hour": 1000}
DAMPINGS = {"undamped (the old behaviour)": UNDAMPED, "defaults": {}, "for = 0s, other defaults": {"for": "0s"}}


@pytest.fixture(scope="module")
def pagerduty() -> Iterator[FakePagerDuty]:
    fake = FakePagerDuty()
    fake.start()
    yield fake
    fake.stop()


def _storm(tmp, pagerduty: FakePagerDuty, damping: dict, seconds: float) -> dict[str, int]:
    env = {"PAGERDUTY_ROUTING_KEY": pagerduty.routing_key, "PAGERDUTY_EVENTS_URL": pagerduty.url}
    with serving(tmp, _config(damping), extra_env=env) as bot:
        bot.command("book a100x8 1h", user="UOWNER")
        dm(bot, "UOWNER", "is ready")
        token = agent_token(bot, "UOWNER")
        events_before = len(pagerduty.events)
        deadline, hot = time.monotonic() + seconds, True
        while time.monotonic() < deadline:
            temp = 95.0 if hot else 60.0
            body = {"gpus": [{"index": i, "util": 90.0, "temp_c": temp} for i in range(8)]}
            assert httpx.post(f"{bot.url}/api/telemetry", content=json.dumps(body), timeout=5, headers={
                "Authorization": f"Bearer {token}", "Content-Type": "application/json"}).status_code == 204
            hot = not hot
            time.sleep(1.0)  # one push per agent interval, as the agent does
        settle(bot, timeout=120)
        events = pagerduty.events[events_before:]
        posts = [c.args for c in bot.api.calls_to("chat.postMessage")]
        return {"triggers": sum(e["event_action"] == "trigger" for e in events),
                "resolves": sum(e["event_action"] == "resolve" for e in events),
                "channel posts": sum(p["channel"] == "CALERTS" for p in posts),
                "on-call DMs": sum(p["channel"] in ("UONC1", "UONC2") for p in posts),
                "owner messages": sum(p["channel"] == "UOWNER" and "On-call has been paged" in p.get("text", "")
                                      for p in posts)}


@pytest.mark.parametrize("name", list(DAMPINGS))
def test_a_flapping_temperature_pages_at_most_the_cap(tmp_path, pagerduty: FakePagerDuty, name: str) -> None:
    seconds = size(12, 40)
    counts = _storm(tmp_path, pagerduty, DAMPINGS[name], seconds)
    record("alert storm", f"8 GPUs flapping 95/60 °C for {seconds} s, {name}: " +
           ", ".join(f"{what} {count}" for what, count in counts.items()))
    if name == "defaults":  # never above the limit for `for` (1 min): nothing pages
        assert counts["triggers"] == counts["resolves"] == counts["channel posts"] == 0
    elif name.startswith("for = 0s"):  # at most the hourly cap, none resolved before min_open
        assert counts["triggers"] <= 4 and counts["resolves"] == 0
        assert counts["channel posts"] == counts["triggers"] and counts["on-call DMs"] == 2 * counts["triggers"]
    else:
        assert counts["triggers"] > 8  # the storm is reproduced
