"""The HTTP face: POST /slack/events (Bolt), GET /healthz, GET /metrics, POST /api/telemetry and GET
/agent/gpubot-agent.py (the telemetry agent the machines download) (uvicorn)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from slack_bolt import BoltRequest, BoltResponse
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from domain.telemetry import TelemetryRejected
from gpubot.metrics import Metrics
from gpubot.wiring import Wired
from scheduling.telemetry import AGENT_PATH, ingest_push

__all__ = ["build_http_app"]

log = logging.getLogger(__name__)

MAX_BODY = 1_048_576


def _kind(body: str) -> str:
    if body.startswith("payload="):
        return "interaction"
    return "event" if body.startswith("{") else "command"


_INTERACTION_PARTS = {"block_actions": ("user", "actions"), "view_submission": ("user", "view"),
                      "view_closed": ("user", "view"), "block_suggestion": ("user",), "shortcut": ("user",),
                      "message_action": ("user",), "interactive_message": ("user",), "dialog_submission": ("user",)}


def _signed(wired: Wired, body: str, headers: dict) -> bool:
    secret = wired.settings.slack_signing_secret
    try:
        return SignatureVerifier(secret.get_secret_value() if secret else "").is_valid_request(body, headers)
    except ValueError:  # a timestamp that is not a number
        return False


def _malformed_interaction(body: object) -> bool:
    """True for an interaction payload Slack would never send (Bolt would fail on it with a 500)."""
    if not isinstance(body, dict):
        return True
    parts = _INTERACTION_PARTS.get(body.get("type")) if isinstance(body.get("type"), str) else None
    if not parts:
        return False
    if not all(isinstance(body.get(part), dict | list) and body.get(part) for part in parts):
        return True
    actions = body.get("actions", [{"action_id": ""}])
    user = body["user"]
    return not isinstance(actions, list) or not all(isinstance(a, dict) and isinstance(a.get("action_id"), str)
                                                    for a in actions) \
        or not isinstance(user, dict) or not isinstance(user.get("id"), str)


def _slack_route(wired: Wired, metrics: Metrics):
    async def slack_events(request: Request) -> Response:
        started = time.perf_counter()
        raw = await request.body()
        if len(raw) > MAX_BODY:
            return JSONResponse({"error": "request too large"}, status_code=413)
        # Bytes that are not UTF-8 cannot carry a valid signature; decoding with replacement makes them fail
        # verification (401) instead of crashing the adapter.
        body = raw.decode("utf-8", errors="replace")
        # Verify before Bolt parses: Bolt's parser raises on a JSON body that is not JSON (a 500 for anyone).
        if not _signed(wired, body, dict(request.headers)):
            return JSONResponse({"error": "invalid signature"}, status_code=401)
        try:
            bolt_request = BoltRequest(body=body, query=request.url.query, headers=dict(request.headers))
            malformed = _malformed_interaction(bolt_request.body)
        except (ValueError, TypeError, AttributeError, KeyError):
            malformed = True
        if malformed:
            return JSONResponse({"error": "malformed request body"}, status_code=400)
        response: BoltResponse = await run_in_threadpool(wired.app.dispatch, bolt_request)
        metrics.slack_ack_seconds.labels(_kind(body)).observe(time.perf_counter() - started)
        return Response(response.body, status_code=response.status,
                        headers=response.first_headers_without_set_cookie())
    return slack_events


def _telemetry_route(wired: Wired):
    async def telemetry(request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        token = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
        raw = await request.body()
        if len(raw) > MAX_BODY:
            return JSONResponse({"error": "request too large"}, status_code=413)
        try:
            await run_in_threadpool(ingest_push, wired.engine, token, raw)
        except TelemetryRejected as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        return Response(status_code=204)
    return telemetry


def _agent_route(wired: Wired):
    """The agent file, byte for byte what the engine hashed into every start command."""
    async def agent_file(request: Request) -> Response:
        return Response(wired.agent.body, media_type="text/x-python; charset=utf-8",
                        headers={"X-Content-SHA256": wired.agent.sha256, "Cache-Control": "no-cache"})
    return agent_file


def build_http_app(wired: Wired, metrics: Metrics, scheduler_running: Callable[[], bool],
                   extra_routes: list[Route] | None = None) -> Starlette:
    """The ASGI app gpubot serves."""

    async def healthz(request: Request) -> Response:
        db_ok = await run_in_threadpool(wired.db.ping)
        sched_ok = scheduler_running()
        status = 200 if db_ok and sched_ok else 503
        return JSONResponse({"database": db_ok, "scheduler": sched_ok}, status_code=status)

    async def metrics_route(request: Request) -> Response:
        data = await run_in_threadpool(generate_latest, metrics.registry)
        return Response(data, media_type=CONTENT_TYPE_LATEST)

    routes = [Route("/slack/events", _slack_route(wired, metrics), methods=["POST"]),
              Route("/healthz", healthz, methods=["GET"]),
              Route("/metrics", metrics_route, methods=["GET"]),
              Route("/api/telemetry", _telemetry_route(wired), methods=["POST"]),
              Route(AGENT_PATH, _agent_route(wired), methods=["GET"]), *(extra_routes or [])]
    return Starlette(routes=routes)
