"""Bounded request bodies for every endpoint: refused by Content-Length before reading, capped when the length
is not declared (chunked), and cut off when the whole body takes longer than a deadline to arrive."""

from __future__ import annotations

import asyncio
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BODY_DEADLINE_SECONDS", "MAX_BODY", "BoundedBodies"]

MAX_BODY = 1_048_576  # Slack's own payloads stay far below; telemetry pushes are a few kB
BODY_DEADLINE_SECONDS = 10.0  # the whole body, from the first receive to the last byte


class _Refused(Exception):
    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status, self.error = status, error


async def _answer(send: Send, status: int, error: str) -> None:
    """A JSON error that closes the connection (the rest of the body is never read)."""
    body = json.dumps({"error": error}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                raise _Refused(400, "Content-Length is not a number") from None
            if length < 0:
                raise _Refused(400, "Content-Length is negative")
            return length
    return None


class BoundedBodies:
    """ASGI middleware: the app sees the body only once it has fully arrived within the size and time limits."""

    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY, deadline: float = BODY_DEADLINE_SECONDS) -> None:
        self.app, self.max_body, self.deadline = app, max_body, deadline

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read the body within limits (or refuse it), then run the app on the buffered body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            declared = _declared_length(scope)
            if declared is not None and declared > self.max_body:
                raise _Refused(413, "request too large")
            body = await asyncio.wait_for(self._read(receive), self.deadline)
        except _Refused as refused:
            await _answer(send, refused.status, refused.error)
            return
        except TimeoutError:
            await _answer(send, 408, "request body too slow")
            return
        if body is None:  # the client went away mid-body: nobody to answer
            return
        await self.app(scope, _replay(body, receive), send)

    async def _read(self, receive: Receive) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise _Refused(413, "request too large")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands over the buffered body once, then waits on the real channel (for a disconnect)."""
    delivered = False

    async def replayed() -> Message:
        nonlocal delivered
        if delivered:
            return await receive()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed
