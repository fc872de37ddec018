"""gpubot serve, a flapping temperature past a page cap of one an hour (issue #27): the alert is posted once to the
alerts channel and to on-call, and each crossing folded into it afterwards updates those messages (chat.update)
with the folded count and the latest reading, instead of posting again."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from gpubot.db.tables.operations import AlertRow
from sqlmodel import select

from tests.e2e.server_kit import agent_token, config, serving, settle, sim

CONFIG = config(
    alerts=True,
    team={"oncall": ["UONC"]},
    health={"max_temp_c": 85, "telemetry_stale_after": "4s",  # the agent pushes once a second
            "for": "0s", "min_open": "1h", "max_pages_per_hour": 1},
    scheduler={"tick": "1s"}, providers={"sim": sim(telemetry=False)})


@pytest.fixture(scope="module")
def bot(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("alert-updates"), CONFIG) as running:
        yield running


def _push(bot, token: str, temp: float) -> int:
    body = {"gpus": [{"index": i, "util": 90.0, "temp_c": temp} for i in range(2)]}
    return httpx.post(f"{bot.url}/api/telemetry", content=json.dumps(body), timeout=5, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"}).status_code


def _folded(bot) -> list[AlertRow]:
    with bot.db.session() as session:
        return list(session.exec(select(AlertRow).where(AlertRow.kind == "overheat")))


def test_a_flapping_temperature_past_the_cap_posts_once_then_updates_the_alert(bot):
    bot.command("book a100x2 1h", user="UOWNER")
    token = agent_token(bot, "UOWNER")  # from the no-telemetry DM, telemetry_stale_after after it is ready
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and sum(row.folded for row in _folded(bot)) < 3:
        # Hot in even seconds, cool in odd ones: the bot keeps one sample per GPU a second (the agent interval)
        assert _push(bot, token, 95.0 if int(time.time()) % 2 == 0 else 60.0) == 204
        time.sleep(0.4)
    settle(bot)
    [alert] = _folded(bot)  # GPU 0 paged, and GPU 1's crossings past the cap of one were folded into it
    assert alert.open_key is not None and alert.folded >= 3
    posts = [c.args for c in bot.api.calls_to("chat.postMessage") if "[overheat]" in c.args.get("text", "")]
    assert sorted(p["channel"] for p in posts) == ["CALERTS", "UONC"]
    updates = [c.args for c in bot.api.calls_to("chat.update") if "[overheat]" in c.args.get("text", "")]
    assert {u["channel"] for u in updates} == {"CALERTS", "DONC"}
    assert 2 * alert.folded >= len(updates) >= 2 * 3  # one per folded crossing and reader, none more
    latest = json.loads(alert.details)[-1]
    for reader in ("CALERTS", "UONC"):
        [shown] = [m["text"] for m in bot.api.messages[reader].values() if "[overheat]" in m["text"]]
        assert f"{alert.folded} more times since" in shown, shown
        assert f"latest: GPU {latest['gpu']} at {latest['value']:.0f} °C" in shown, shown
    print(f"flapping 95/60 °C on 2 GPUs, cap 1 page/h: {len(posts)} posts (channel + on-call), "
          f"{len(updates)} updates for {alert.folded} folded crossings")
