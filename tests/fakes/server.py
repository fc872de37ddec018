"""A small threaded HTTP server on 127.0.0.1 for faithful vendor fakes, with fault injection.

A fake subclasses FakeVendor and registers routes with `route(method, path_regex)`. Handlers receive a
Request and return (status, json_body) or (status, json_body, headers); a `bytes` body is sent as it is.
Faults queued with `inject()` hit the next matching request(s) before the handler runs (or, for
"lost_response" and "late_status", after it runs: the vendor did the work, and the answer was lost or replaced
by a gateway's error status). `latency` (seconds) delays every request, half before the handler runs and half
after, so a client can die mid-call either way.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["FakeVendor", "Fault", "Request"]


@dataclass
class Request:
    """What the fake received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    match: re.Match | None = None
    at: float = field(default_factory=time.monotonic)  # when it arrived (monotonic seconds)
    answer: tuple[int, Any] | None = None  # (status, body) the route answered (before any fault replaced it)

    def json(self) -> Any:
        """The body parsed as JSON (None when empty)."""
        return json.loads(self.body) if self.body else None


@dataclass
class Fault:
    """One injected fault: kind is one of refuse, timeout, status, ratelimit, malformed, extra_fields,
    lost_response, late_status. `path` (regex) limits it to some requests; `times` how many it hits."""

    kind: str
    path: str = ".*"
    method: str | None = None
    times: int = 1
    status: int = 500
    retry_after: str | None = None
    delay: float = 5.0
    hits: int = field(default=0)


Handler = Callable[[Request], tuple]


class FakeVendor:
    """Base of every fake provider server."""

    def __init__(self) -> None:
        self.routes: list[tuple[str, re.Pattern, Handler]] = []
        self.requests: list[Request] = []
        self.faults: list[Fault] = []
        self.lock = threading.RLock()
        self.latency = 0.0
        self._server: ThreadingHTTPServer | None = None

    # -- set-up -------------------------------------------------------------------------------------
    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """Register a handler for METHOD and a full-match path regex."""
        self.routes.append((method.upper(), re.compile(pattern), handler))

    def inject(self, kind: str, **options: Any) -> Fault:
        """Queue a fault for the next matching request(s)."""
        fault = Fault(kind, **options)
        with self.lock:
            self.faults.append(fault)
        return fault

    def start(self) -> str:
        """Serve on an ephemeral loopback port; returns the base URL."""
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                with contextlib.suppress(ConnectionError):  # the client went away (killed mid-call)
                    fake._dispatch(self)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self.url

    @property
    def url(self) -> str:
        """Base URL of the running server."""
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        """Stop serving."""
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    # -- serving --------------------------------------------------------------------------------------
    def _dispatch(self, http: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(http.path)
        length = int(http.headers.get("Content-Length") or 0)
        body = http.rfile.read(length) if length else b""
        request = Request(http.command, parts.path, parse_qs(parts.query),
                          {k.lower(): v for k, v in http.headers.items()}, body)
        with self.lock:
            self.requests.append(request)
        fault = self._take_fault(request)
        if fault and fault.kind not in ("lost_response", "late_status") and self._apply_fault(fault, http):
            return
        time.sleep(self.latency / 2)
        status, payload, headers = self._handle(request)
        time.sleep(self.latency / 2)
        if fault and fault.kind == "lost_response":
            self._drop(http)
            return
        if fault and fault.kind == "late_status":
            status, payload, headers = fault.status, {"error": "injected after the work was done"}, {}
        if fault and fault.kind == "extra_fields" and isinstance(payload, dict):
            payload = {**payload, "unexpected_field": {"nested": [1, 2, 3]}, "_trace": "x"}
        self._write(http, status, payload, headers)

    def _handle(self, request: Request) -> tuple[int, Any, dict]:
        for method, pattern, handler in self.routes:
            match = pattern.fullmatch(request.path)
            if method == request.method and match:
                request.match = match
                result = handler(request)
                status, payload, *rest = result
                request.answer = (status, payload)
                return status, payload, (rest[0] if rest else {})
        status, payload = self.unrouted(request)
        request.answer = (status, payload)
        return status, payload, {}

    def unrouted(self, request: Request) -> tuple[int, Any]:
        """The answer to a path the fake does not serve (a fake overrides it with its vendor's own shape)."""
        return 404, {"error": f"no route for {request.method} {request.path}"}

    def _take_fault(self, request: Request) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.method and fault.method.upper() != request.method:
                    continue
                if re.search(fault.path, request.path) and fault.hits < fault.times:
                    fault.hits += 1
                    if fault.hits >= fault.times:
                        self.faults.remove(fault)
                    return fault
        return None

    def _apply_fault(self, fault: Fault, http: BaseHTTPRequestHandler) -> bool:
        if fault.kind == "refuse":
            self._drop(http)
        elif fault.kind == "timeout":
            time.sleep(fault.delay)
            self._drop(http)
        elif fault.kind == "status":
            self._write(http, fault.status, {"error": "injected"}, {})
        elif fault.kind == "ratelimit":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            self._write(http, 429, {"error": "rate limited"}, headers)
        elif fault.kind == "malformed":
            self._write_raw(http, 200, b'{"data": [unterminated', "application/json")
        else:
            return False
        return True

    @staticmethod
    def _drop(http: BaseHTTPRequestHandler) -> None:
        http.close_connection = True
        with contextlib.suppress(OSError):
            http.connection.shutdown(socket.SHUT_RDWR)

    def _write(self, http: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict) -> None:
        if isinstance(payload, bytes):  # a file, not JSON: its Content-Type comes in `headers`
            headers = dict(headers)
            self._write_raw(http, status, payload, headers.pop("Content-Type", "application/octet-stream"), headers)
            return
        body = b"" if payload is None and status in (204,) else json.dumps(payload).encode()
        self._write_raw(http, status, body, "application/json", headers)

    @staticmethod
    def _write_raw(http: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str,
                   headers: dict | None = None) -> None:
        http.send_response(status)
        http.send_header("Content-Type", ctype)
        http.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            http.send_header(key, value)
        http.end_headers()
        http.wfile.write(body)
