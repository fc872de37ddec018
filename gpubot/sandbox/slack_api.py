"""A local stand-in for the Slack Web API (and response_url), served on 127.0.0.1.

The terminal demo, the web sandbox and the tests point the bot's WebClient at it (SLACK_API_URL). It keeps
every call it received; what Slack keeps and answers (messages as Slack would show them, views, files) is its
workspace (gpubot/sandbox/slack_workspace.py).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from gpubot.sandbox.slack_workspace import SlackWorkspace

__all__ = ["FakeSlackApi", "SlackCall"]


@dataclass
class SlackCall:
    """One call the bot made: Web API method (or `response_url`) and its arguments."""

    method: str
    args: dict
    headers: dict
    at: float = field(default_factory=time.monotonic)
    result: dict = field(default_factory=dict)  # what the fake answered (e.g. the ts of a posted message)


class FakeSlackApi(SlackWorkspace):
    """Serves a workspace over HTTP: records every call and answers like Slack does for the methods gpubot uses,
    with the faults a test asks for (outages, rate limits, refused tokens, channels gone)."""

    def __init__(self, user_zones: dict[str, str] | None = None, keep_in: Path | None = None,
                 user_locales: dict[str, str] | None = None) -> None:
        super().__init__(user_zones, keep_in, user_locales)
        self.calls: list[SlackCall] = []
        self.rate_limits: dict[str, list[int]] = {}  # method -> [remaining 429s, Retry-After]
        self.down: set[str] = set()  # Web API methods answered 503 (an outage), "*" for every method
        self.failing: dict[str, int] = {}  # channel -> how many more messages posted to it are answered 503
        self.refusing: dict[str, str] = {}  # method -> the Slack error it answers (ok: false), e.g. missing_scope
        self.invalid_tokens: set[str] = set()  # tokens answered invalid_auth (revoked, or another workspace's)
        # Called with each call Slack took, before its answer is sent: a test kills the caller there (the message
        # is in Slack, the caller never hears it was).
        self.after_accept: Callable[[SlackCall], None] | None = None
        self.refused = 0  # calls answered 503 or 429
        self._changed = threading.Condition(self._lock)
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self, port: int = 0) -> str:
        """Serve on 127.0.0.1; returns the Web API base URL (ending in /api/)."""
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                api._serve(self)

            def do_GET(self) -> None:  # the SDK reads with GET and a query string (users.info)
                api._serve(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return f"{self.base}/api/"

    @property
    def base(self) -> str:
        """http://127.0.0.1:PORT"""
        host, port = self._server.server_address[:2]  # type: ignore[union-attr]
        return f"http://{host}:{port}"

    def response_url(self, key: str) -> str:
        """A response_url for one slash command or interaction."""
        return f"{self.base}/response/{key}"

    def stop(self) -> None:
        """Stop serving."""
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    # -- queries for tests and the demo ------------------------------------------------------------------
    def calls_to(self, method: str) -> list[SlackCall]:
        """Calls of one method, in order."""
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, predicate, timeout: float = 10.0) -> bool:
        """Block until `predicate(calls)` holds or `timeout` passes."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(list(self.calls)):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True

    def wait_quiet(self, quiet: float = 0.4, timeout: float = 15.0, after: int | None = None) -> None:
        """Block until no call has arrived for `quiet` seconds — and, with `after`, until at least one call
        beyond the first `after` has arrived (work handed to the bot's workers may not have called yet)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                last = self.calls[-1].at if self.calls else 0.0
                arrived = after is None or len(self.calls) > after
            if arrived and time.monotonic() - last >= quiet:
                return
            time.sleep(quiet / 4)

    # -- serving -------------------------------------------------------------------------------------------
    def _serve(self, http: BaseHTTPRequestHandler) -> None:
        raw = http.rfile.read(int(http.headers.get("Content-Length") or 0))
        path, _, query = http.path.partition("?")
        method = path.removeprefix("/api/") if path.startswith("/api/") else "response_url"
        if http.path.startswith("/upload/"):  # step 2 of files_upload_v2: the file's bytes, as they are
            method, args = "file_upload", {"_file_id": http.path.rsplit("/", 1)[-1], "_data": raw}
        else:
            args = _decode(raw, http.headers.get("Content-Type", ""))
            args.update({k: v[0] for k, v in parse_qs(query).items()})
        if method == "response_url":
            args["_key"] = http.path.rsplit("/", 1)[-1]
        if method != "response_url" and (method in self.down or "*" in self.down or self._fails(method, args)):
            with self._lock:
                self.refused += 1
            return _send(http, 503, {"ok": False, "error": "service_unavailable"})
        limited = self._rate_limited(method)
        if limited is not None:
            with self._lock:
                self.refused += 1
            return _send(http, 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(limited)})
        with self._changed:
            call = SlackCall(method, args, dict(http.headers))
            # Answered before it is listed: readers that do not take the lock (the sandbox page, the console)
            # must never see a call without its result (a posted message without its ts would be lost to them).
            body = call.result = self._token_refusal(method, http.headers, args) or self._answer(method, args)
            self.calls.append(call)
            self._changed.notify_all()
        if self.after_accept is not None:
            self.after_accept(call)
        _send(http, 200, body)

    def _fails(self, method: str, args: dict) -> bool:
        """Whether this message is one `failing` says its channel answers 503 (counted down)."""
        channel = args.get("channel", "")
        with self._lock:
            if method != "chat.postMessage" or self.failing.get(channel, 0) <= 0:
                return False
            self.failing[channel] -= 1
            return True

    def _rate_limited(self, method: str) -> int | None:
        with self._lock:
            entry = self.rate_limits.get(method)
            if entry and entry[0] > 0:
                entry[0] -= 1
                return entry[1]
        return None

    def _token_refusal(self, method: str, headers, args: dict) -> dict | None:
        """Slack's answer to a Web API call whose token it refuses: an app-level token (xapp-) is good only for
        Socket Mode's apps.connections.open (not_allowed_token_type); a token listed in `invalid_tokens` is
        invalid_auth. Any other token is taken, as before."""
        if method in ("response_url", "file_upload"):
            return None  # a response_url and an upload URL need no token
        token = headers.get("Authorization", "").removeprefix("Bearer ") or str(args.get("token", ""))
        if token in self.invalid_tokens:
            return {"ok": False, "error": "invalid_auth"}
        if token.startswith("xapp-") and method != "apps.connections.open":
            return {"ok": False, "error": "not_allowed_token_type"}
        return None

    def _answer(self, method: str, args: dict) -> dict:
        if method in self.refusing:
            return {"ok": False, "error": self.refusing[method]}
        return self.answer(method, args)

def _decode(raw: bytes, content_type: str) -> dict:
    if "json" in content_type:
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}
    if "form" in content_type:
        return {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
    return {"_raw_size": len(raw)}


def _send(http: BaseHTTPRequestHandler, status: int, body: dict, headers: dict | None = None) -> None:
    data = json.dumps(body).encode()
    http.send_response(status)
    http.send_header("Content-Type", "application/json")
    http.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        http.send_header(key, value)
    http.end_headers()
    http.wfile.write(data)
