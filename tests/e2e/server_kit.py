"""Run `gpubot serve` as a real subprocess against a local Slack Web API (the code lives in
gpubot/sandbox/process.py, shared with the benchmarks)."""

from __future__ import annotations

from gpubot.sandbox.process import BOT_TOKEN, SECRET, RunningBot, free_port, serving, start_bot

__all__ = ["BOT_TOKEN", "SECRET", "RunningBot", "free_port", "serving", "start_bot"]
