"""The P1/P5 floor: a bare Bolt app that only acks, on gpubot's server stack (Starlette + uvicorn, Bolt's
dispatch in Starlette's thread pool, as in gpubot/server.py), its Web API client on the same fake Slack.
Run as `python -m bench.floor_app PORT SLACK_API_URL`."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import uvicorn
from slack_bolt import App, BoltRequest, BoltResponse
from slack_sdk import WebClient
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gpubot.sandbox.process import BOT_TOKEN, SECRET

__all__ = ["build_floor_app"]


def build_floor_app(api_url: str) -> Starlette:
    """/slack/events acking every command (signature checked), and /healthz."""
    bolt = App(client=WebClient(token=BOT_TOKEN, base_url=api_url), signing_secret=SECRET,
               token_verification_enabled=False, process_before_response=False, raise_error_for_unhandled_request=False,
               listener_executor=ThreadPoolExecutor(32, "bolt-ack"))
    bolt.command("/gpu")(lambda ack: ack())

    async def slack_events(request: Request) -> Response:
        body = (await request.body()).decode("utf-8", errors="replace")
        bolt_request = BoltRequest(body=body, query=request.url.query, headers=dict(request.headers))
        response: BoltResponse = await run_in_threadpool(bolt.dispatch, bolt_request)
        return Response(response.body, status_code=response.status,
                        headers=response.first_headers_without_set_cookie())

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    return Starlette(routes=[Route("/slack/events", slack_events, methods=["POST"]),
                             Route("/healthz", healthz, methods=["GET"])])


if __name__ == "__main__":
    uvicorn.run(build_floor_app(sys.argv[2]), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
                access_log=False)
