"""gpubot's two agent-facing routes on 127.0.0.1, for tests of the start commands without a whole bot.

GET /agent/gpubot-agent.py serves `agent_body` (the real agent file by default, or anything a test wants a
machine to download); POST /api/telemetry records each batch (token, parsed body, monotonic time) and answers
204 while the token is in `tokens`, 401 otherwise (reason `booking_ended` for a token it gave, as gpubot says it for a
booking that ended; `unknown_token` else). `launch(token)` is the AgentLaunch a start command needs,
with the SHA-256 of what is served (or a given one, to model a mismatch).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

from gpubot.domain.ports import AgentLaunch
from gpubot.scheduling.agent import AGENT_PATH

from gpubot.agent_file import load_agent_file
from tests.fakes.server import FakeVendor, Request

__all__ = ["AgentHost", "Push"]


@dataclass(frozen=True)
class Push:
    """One batch an agent pushed."""

    token: str
    body: dict
    at: float


class AgentHost(FakeVendor):
    """Serves the agent and takes pushes, like gpubot's /agent/… and /api/telemetry."""

    def __init__(self) -> None:
        super().__init__()
        self.agent_body = load_agent_file().body
        self.tokens: set[str] = set()
        self.given: set[str] = set()  # every token `launch` gave
        self.pushes: list[Push] = []
        self.route("GET", AGENT_PATH, self._agent)
        self.route("POST", "/api/telemetry", self._telemetry)

    def launch(self, token: str, *, sha256: str | None = None, interval: float = 0.2) -> AgentLaunch:
        """The agent a start command should fetch from this host, accepting `token` from now on."""
        with self.lock:
            self.tokens.add(token)
            self.given.add(token)
        digest = sha256 or hashlib.sha256(self.agent_body).hexdigest()
        return AgentLaunch(self.url, self.url + AGENT_PATH, digest, token, interval)

    def pushes_of(self, token: str) -> list[Push]:
        """The batches pushed with `token`."""
        with self.lock:
            return [p for p in self.pushes if p.token == token]

    def downloads(self) -> int:
        """How many times the agent file was fetched."""
        with self.lock:
            return sum(1 for r in self.requests if r.method == "GET" and r.path == AGENT_PATH)

    def _agent(self, request: Request) -> tuple:
        return 200, self.agent_body, {"Content-Type": "text/x-python; charset=utf-8"}

    def _telemetry(self, request: Request) -> tuple:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        with self.lock:
            if token not in self.tokens:  # as gpubot says it: a token it gave once is a booking that ended
                ended = token in self.given
                return 401, {"error": "booking ended" if ended else "unknown agent token",
                             "reason": "booking_ended" if ended else "unknown_token"}
            self.pushes.append(Push(token, json.loads(request.body), time.monotonic()))
        return 204, None
