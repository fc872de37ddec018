"""The HTTP face: POST /slack/events (Bolt), GET /livez, /readyz (and /healthz, its alias), GET /metrics,
POST /api/telemetry and GET /agent/gpubot-agent.py (the telemetry agent the machines download) (uvicorn).

Every body is bounded before any route sees it (gpubot/bodies.py); until start-up is done (migration, the first
reconcile) only the health routes and the agent file answer, the rest say 503; a database fault is a 503 too."""

from __future__ import annotations

import hmac
import json
import logging
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from urllib.parse import parse_qs

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from slack_bolt import BoltRequest, BoltResponse
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gpubot.bodies import BoundedBodies
from gpubot.bot.i18n import translator_for
from gpubot.bot.tickets import Ticket, current_ticket
from gpubot.domain.telemetry import TelemetryRejected
from gpubot.edge import deeper_than, interaction_problem, telemetry_batch
from gpubot.health import Health
from gpubot.inbox import DUPLICATE, ticket_for
from gpubot.lull import Lull
from gpubot.metrics import Metrics
from gpubot.push_limit import DiskGuard, PushLimiter
from gpubot.scheduling.agent import AGENT_PATH, token_hash
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.telemetry import pushing_booking, store_push
from gpubot.signing import is_signed
from gpubot.slack_auth import SlackAuth, answer_waiting
from gpubot.slack_waiting import kind_of, refuse_submission, waiting_for
from gpubot.wiring import Wired

__all__ = ["build_http_app"]

log = logging.getLogger(__name__)

UNAVAILABLE = {"Retry-After": "5"}


def _kind(body: str) -> str:
    if body.startswith("payload="):
        return "interaction"
    return "event" if body.startswith("{") else "command"


def _body_problem(body: str, content_type: str) -> str | None:
    """Why a signed body is not one Slack would send (checked before Bolt parses it), or None."""
    if body.startswith("payload="):
        payload = parse_qs(body).get("payload")
        return interaction_problem(payload[0]) if payload else "empty payload"
    if "json" in content_type or body.startswith("{"):
        try:
            document = json.loads(body)
        except RecursionError:
            return "body nested too deep"
        except ValueError:
            return "body is not JSON"
        return "body nested too deep" if deeper_than(document) else None
    return None


def _dispatch(wired: Wired, body: str, bolt_request: BoltRequest, processing: Executor, lull: Lull,
              auth: SlackAuth | None = None) -> BoltResponse:
    """Record the request in the inbox (before the ack). Our slash command (and a click while Slack has not
    authorised the bot) is acked here and now, and Bolt runs its listener on `processing` once Slack has; a modal
    submission then is refused in the modal, to be submitted again (gpubot/slack_waiting.py); anything else Bolt
    acks itself (its ack may carry an answer). The ticket marks the request done when the listener and its later
    work have finished."""
    ticket = ticket_for(wired.db, body)
    if ticket is DUPLICATE:  # a retried, re-signed or replayed copy: the first delivery does the work
        log.info("a %s already received (Slack retry %s) acked and not dispatched again", _kind(body),
                 bolt_request.headers.get("x-slack-retry-num", ["none"])[0])
        return BoltResponse(status=200, body="")
    kind = kind_of(bolt_request.body, wired.ctx.command)
    if ticket is not None and kind == "view_submission" and auth is not None:
        refused = refuse_submission(auth, bolt_request.body, _translator(wired, bolt_request.body))
        if refused is not None:
            ticket.release()
            return refused
    waits = kind == "block_actions" and auth is not None and not auth.authorised()
    if ticket is not None and (kind == "command" or waits):
        try:
            processing.submit(_process_authorised, wired, bolt_request, ticket, (lull, lull.mark()), auth)
        except BaseException:
            ticket.release()
            raise
        return BoltResponse(status=200, body="")
    return _process(wired, bolt_request, ticket)


def _translator(wired: Wired, body: dict):
    user = body.get("user_id") or (body.get("user") or {}).get("id") or ""
    return translator_for(wired.ctx.languages.chosen(str(user)) or wired.engine.policy.team.language)


def _process_authorised(wired: Wired, bolt_request: BoltRequest, ticket: Ticket | None,
                        after: tuple[Lull, tuple[float, int]], auth: SlackAuth | None) -> BoltResponse:
    """`_process` once Slack has authorised the bot: a command or a click waits for that in the inbox (its sender
    told through response_url), and is given up, marked done, when it does not come (gpubot/slack_auth.py)."""
    if auth is not None and not auth.authorised():
        body = bolt_request.body if isinstance(bolt_request.body, dict) else {}
        _user, response_url, what = waiting_for(body)
        if not answer_waiting(auth, response_url, what, _translator(wired, body)):
            if ticket is not None:
                ticket.release()
            return BoltResponse(status=200, body="")
    return _process(wired, bolt_request, ticket, after)


def _process(wired: Wired, bolt_request: BoltRequest, ticket: Ticket | None,
             after: tuple[Lull, tuple[float, int]] | None = None) -> BoltResponse:
    """Bolt's dispatch (after a lull between acks, when given one and the ack's mark), carrying the request's
    ticket (released when the listener returns)."""
    if after is not None:
        after[0].wait(after[1])
    token = current_ticket.set(ticket)
    try:
        return wired.app.dispatch(bolt_request)
    finally:
        current_ticket.reset(token)
        if ticket is not None:
            ticket.release()


def _slack_route(wired: Wired, metrics: Metrics, auth: SlackAuth | None = None):
    # Bolt's dispatch of an acked command, off the ack path (Bolt waits for the listener's ack() in 10 ms sleeps),
    # once the acks pause (gpubot/lull.py).
    processing, lull = ThreadPoolExecutor(8, "gpubot-inbox"), Lull()

    async def slack_events(request: Request) -> Response:
        started = time.perf_counter()
        raw = await request.body()  # bounded by BoundedBodies
        # Bytes that are not UTF-8 cannot carry a valid signature; decoding with replacement makes them fail
        # verification (401) instead of crashing the adapter.
        body = raw.decode("utf-8", errors="replace")
        # Verify before Bolt parses: Bolt's parser raises on a JSON body that is not JSON (a 500 for anyone).
        if not is_signed(wired.settings.slack_signing_secret, body, dict(request.headers)):
            return JSONResponse({"error": "invalid signature"}, status_code=401)
        problem = _body_problem(body, request.headers.get("content-type", ""))
        if problem:
            log.info("refused a signed Slack request: %s", problem)
            return JSONResponse({"error": f"malformed request body: {problem}"}, status_code=400)
        try:
            bolt_request = BoltRequest(body=body, query=request.url.query, headers=dict(request.headers))
        except (ValueError, TypeError, AttributeError, KeyError):
            return JSONResponse({"error": "malformed request body"}, status_code=400)
        with lull.acking():
            response: BoltResponse = await run_in_threadpool(_dispatch, wired, body, bolt_request, processing, lull,
                                                                auth)
        metrics.slack_ack_seconds.labels(_kind(body)).observe(time.perf_counter() - started)
        return Response(response.body, status_code=response.status,
                        headers=response.first_headers_without_set_cookie())
    slack_events.processing = processing  # type: ignore[attr-defined]  # drained when the process stops
    return slack_events


def _ingest(engine: Engine, token: str, raw: bytes, limiter: PushLimiter, disk: DiskGuard) -> int:
    """The token first (so an unknown one is a 401 whatever it sent), then the ledger's disk (503), its rate
    limit (429), then the body's shape, then the store."""
    booking = pushing_booking(engine, token)
    disk.check()
    limiter.check(token_hash(token))
    batch = telemetry_batch(raw)
    return store_push(engine, booking, batch.readings(), batch.batch_id)


def _telemetry_route(wired: Wired, disk: DiskGuard | None = None):
    limiter = PushLimiter(lambda: wired.engine.policy)
    disk = disk or DiskGuard(wired.db.url, lambda: wired.engine.policy.retention.min_free_disk_mb)

    async def telemetry(request: Request) -> Response:
        auth = request.headers.get("authorization", "")
        token = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
        raw = await request.body()  # bounded by BoundedBodies
        try:
            await run_in_threadpool(_ingest, wired.engine, token, raw, limiter, disk)
        except TelemetryRejected as exc:
            answer = {"error": str(exc), **({"reason": exc.reason} if exc.reason else {})}
            headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
            return JSONResponse(answer, status_code=exc.status, headers=headers)
        return Response(status_code=204)
    return telemetry


def _agent_route(wired: Wired):
    """The agent file, byte for byte what the engine hashed into every start command."""
    async def agent_file(request: Request) -> Response:
        return Response(wired.agent.body, media_type="text/x-python; charset=utf-8",
                        headers={"X-Content-SHA256": wired.agent.sha256, "Cache-Control": "no-cache"})
    return agent_file


def _database_fault(request: Request, exc: Exception) -> Response:
    """A database that is down or refuses writes is a temporary 503, never a 500 with a traceback."""
    log.warning("database fault on %s: %s", request.url.path, type(exc).__name__)
    return JSONResponse({"error": "database unavailable"}, status_code=503, headers=UNAVAILABLE)


def _metrics_port(wired: Wired | None) -> int | None:
    return wired.settings.metrics_port if wired is not None else None


def _metrics_refusal(settings, request: Request) -> Response | None:
    """401 when METRICS_TOKEN is set and the request does not carry it as a bearer token."""
    token = settings.metrics_token.get_secret_value() if settings.metrics_token else ""
    given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if token and not hmac.compare_digest(given.encode(), token.encode()):
        return JSONResponse({"error": "metrics need the bearer token (METRICS_TOKEN)"}, status_code=401,
                            headers={"WWW-Authenticate": "Bearer"})
    return None


class MetricsPortOnly:
    """With METRICS_PORT set, /metrics answers only on that port, and that port answers nothing else."""

    def __init__(self, app, port: int | None) -> None:
        self.app, self.port = app, port

    async def __call__(self, scope, receive, send) -> None:
        """Route by the port the request arrived on."""
        if self.port and scope["type"] == "http":
            on_metrics_port = (scope.get("server") or (None, None))[1] == self.port
            if on_metrics_port != (scope["path"] == "/metrics"):
                await JSONResponse({"error": "not found"}, status_code=404)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _only_when_started(health: Health, route):
    async def gated(request: Request) -> Response:
        if not health.started.is_set():
            return JSONResponse({"error": "starting"}, status_code=503, headers=UNAVAILABLE)
        return await route(request)
    return gated


def build_http_app(wired: Wired, metrics: Metrics, health: Health,
                   extra_routes: list[Route] | None = None) -> Starlette:
    """The ASGI app gpubot serves."""

    async def livez(request: Request) -> Response:
        return JSONResponse({"live": True})

    async def readyz(request: Request) -> Response:
        checks = await run_in_threadpool(health.readiness)
        reasons = health.reasons()
        body = {**checks, "providers_down": health.providers_down(), **({"reasons": reasons} if reasons else {})}
        return JSONResponse(body, status_code=200 if all(checks.values()) else 503)

    async def metrics_route(request: Request) -> Response:
        refused = _metrics_refusal(wired.settings, request)
        if refused:
            return refused
        data = await run_in_threadpool(generate_latest, metrics.registry)
        return Response(data, media_type=CONTENT_TYPE_LATEST)

    slack = _slack_route(wired, metrics, health.slack_auth)
    routes = [Route("/slack/events", _only_when_started(health, slack), methods=["POST"]),
              Route("/livez", livez, methods=["GET"]),
              Route("/readyz", readyz, methods=["GET"]),
              Route("/healthz", readyz, methods=["GET"]),
              Route("/metrics", _only_when_started(health, metrics_route), methods=["GET"]),
              Route("/api/telemetry", _only_when_started(health, _telemetry_route(wired, health.disk)),
                    methods=["POST"]),
              Route(AGENT_PATH, _agent_route(wired), methods=["GET"]), *(extra_routes or [])]
    app = Starlette(routes=routes, middleware=[Middleware(BoundedBodies), Middleware(MetricsPortOnly,
                                                                                     port=_metrics_port(wired))],
                    exception_handlers={DBAPIError: _database_fault, PoolTimeout: _database_fault})
    app.state.inbox_pool = slack.processing  # type: ignore[attr-defined]
    return app
