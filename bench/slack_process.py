"""The fake Slack Web API in its own process, so that its work does not share a GIL with the load generator.
Run as `python -m bench.slack_process`: prints the base URL, serves until terminated."""

from __future__ import annotations

import signal
import threading

from gpubot.sandbox.slack_api import FakeSlackApi

if __name__ == "__main__":
    api = FakeSlackApi()
    api.start()
    print(api.base, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
