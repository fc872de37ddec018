"""Run `gpubot serve` as a real subprocess against a local Slack Web API (the code lives in
gpubot/sandbox/process.py, shared with the benchmarks), and wait for what it says to Slack."""

from __future__ import annotations

import json

from gpubot.sandbox.process import BOT_TOKEN, SECRET, RunningBot, free_port, serving, start_bot

__all__ = ["BOT_TOKEN", "SECRET", "RunningBot", "as_shown", "dm", "free_port", "serving", "start_bot", "wait_call"]


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
