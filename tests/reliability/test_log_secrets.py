"""Agent tokens never reach the log (issue #20): `gpubot serve` at DEBUG books a machine, whose no-telemetry DM (sent
through the Slack Web API, whose client logs request bodies at DEBUG) carries the token; the log holds none."""

from __future__ import annotations

import re

from tests.e2e.server_kit import BOT_TOKEN, SECRET, serving, settle

CONFIG = """
[health]
telemetry_stale_after = "2s"     # the DM with the agent's line (and its token) comes 2 s after ready

[providers.sim]
kind = "simulated"
telemetry = false
stock = [{ gpu = "a100", region = "sim-1", count = 8, price = 2.0 }]
"""


def test_no_agent_token_or_secret_in_a_debug_log(tmp_path):
    with serving(tmp_path, CONFIG, extra_env={"LOG_LEVEL": "DEBUG"}) as bot:
        bot.command("book a100x1 1h", user="UALICE")
        tokens: list[str] = []

        def ready(calls) -> bool:
            tokens[:] = [m.group(1) for c in calls if c.method == "chat.postMessage"
                         and (m := re.search(r"GPUBOT_AGENT_TOKEN=(gpa_\S+) ", c.args.get("text", "")))]
            return bool(tokens)

        assert bot.api.wait_for(ready, 30)
        settle(bot)
    log = bot.log_path.read_text(errors="replace")
    assert " DEBUG " in log and "chat.postMessage" in log  # the Web API client's own DEBUG lines are there
    assert "GPUBOT_AGENT_TOKEN=gpa_***" in log  # the DM body was logged, its token blanked
    assert tokens[0] not in log and tokens[0][4:20] not in log
    assert BOT_TOKEN not in log and SECRET not in log
