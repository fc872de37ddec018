"""`gpubot serve`'s process: the HTTP server answers /livez at once; wiring the bot, migration and the first
reconcile run beside it, and the real app takes over when wired (ready once start-up is done)."""

from __future__ import annotations

import json
import logging
import signal
import socket
import threading
import time
from types import FrameType

import uvicorn
from sqlalchemy.exc import DBAPIError
from starlette.types import ASGIApp, Receive, Scope, Send

from gpubot.domain.policy import Policy
from gpubot.settings import Settings
from gpubot.startup import one_line

__all__ = ["StartupFailed", "Switch", "serve"]

log = logging.getLogger("gpubot.serve")

DATABASE_RETRY_SECONDS = 2.0
STOP_SECONDS = 15.0  # SIGTERM/SIGINT: requests in flight, then the inbox and delivery workers, each within this


class _Server(uvicorn.Server):
    """uvicorn's server, whose SIGTERM or SIGINT is a clean stop: gpubot drains and exits 0 (uvicorn would raise
    the signal again once down, and the process would end by it). A second SIGINT still forces the exit."""

    stopped_by: int | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Stop serving; remember why, without re-raising it later."""
        super().handle_exit(sig, frame)
        self.stopped_by = sig
        self._captured_signals.clear()


class StartupFailed(Exception):
    """Wiring, migration or the first reconcile failed for a reason waiting would not fix."""


class Switch:
    """ASGI app: /livez (200) and 503 "starting" elsewhere until the real app is set, then the real app."""

    def __init__(self) -> None:
        self.app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand over to the real app once set; answer for the process until then."""
        if self.app is not None:
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        live = scope["path"] == "/livez"
        body = json.dumps({"live": True} if live else {"error": "starting", "started": False}).encode()
        await send({"type": "http.response.start", "status": 200 if live else 503,
                    "headers": [(b"content-type", b"application/json"), (b"retry-after", b"5"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def serve(settings: Settings, policy: Policy, policy_source: str, sockets: list[socket.socket]) -> None:
    """Serve on `sockets` (the main one first, then METRICS_PORT's) until interrupted; raises StartupFailed when
    start-up could not complete."""
    switch = Switch()
    server = _Server(uvicorn.Config(switch, log_level="warning", access_log=False, lifespan="off",
                                    timeout_graceful_shutdown=int(STOP_SECONDS)))
    failure: list[BaseException] = []
    runtimes: list = []
    threading.Thread(target=_start_up, args=(settings, policy, policy_source, sockets[0], switch, server, failure,
                                             runtimes), name="gpubot-start-up", daemon=True).start()
    try:
        server.run(sockets=sockets)
    finally:
        stopping = time.monotonic()
        unfinished = [part for runtime in runtimes for part in runtime.stop(within=STOP_SECONDS)]
        if server.stopped_by is not None:
            log.info("gpubot stopped (%s) in %.1f s%s", signal.Signals(server.stopped_by).name,
                     time.monotonic() - stopping, f"; not finished in {STOP_SECONDS:.0f} s: {', '.join(unfinished)} "
                     "(taken up at the next start)" if unfinished else "")
    if failure:
        raise StartupFailed(one_line(failure[0]))


def _start_up(settings, policy, policy_source, listening, switch: Switch, server: uvicorn.Server,
              failure: list, runtimes: list) -> None:
    from gpubot.runtime import Runtime
    from gpubot.startup import announce
    from gpubot.wiring import wire

    try:
        runtime = Runtime(wire(settings, policy))
        runtimes.append(runtime)
        switch.app = runtime.http_app()
        announce(listening, policy_source, runtime.wired)
        if settings.socket_mode:
            from slack_bolt.adapter.socket_mode import SocketModeHandler

            SocketModeHandler(runtime.wired.app, settings.slack_app_token.get_secret_value()).connect()
        while not server.should_exit:
            try:
                runtime.start_background()
                return
            except DBAPIError as exc:  # the database is locked, down or read-only: live, not ready, try again
                log.warning("start-up waits for the database (%s); retrying in %.0f s", one_line(exc),
                            DATABASE_RETRY_SECONDS)
                time.sleep(DATABASE_RETRY_SECONDS)
    except Exception as exc:  # said as one line by serve() once the server is down
        failure.append(exc)
        server.should_exit = True
