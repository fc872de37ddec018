"""The web sandbox's page and its JSON API (`gpubot demo --web`): the static page, `GET /sandbox/state` it polls,
and the `POST /sandbox/…` routes its typing and clicks go through, each handed to the Sandbox
(gpubot/sandbox/web.py), which sends them to the bot as signed Slack requests."""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from gpubot.sandbox.modal import values_of
from gpubot.sandbox.web import Sandbox

__all__ = ["STATIC", "page_app"]

STATIC = Path(__file__).parent / "static"


def page_app(sandbox: Sandbox) -> Starlette:
    """The page and its JSON API, served for `sandbox`."""
    return _Page(sandbox).app()


class _Page:
    """The routes of the page, each a thin translation of a JSON body into one Sandbox call."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def app(self) -> Starlette:
        """The page and its JSON API."""
        return Starlette(routes=[
            Route("/", lambda request: FileResponse(STATIC / "index.html")),
            Route("/sandbox/state", lambda request: JSONResponse(self.sandbox.state())),
            Route("/sandbox/command", self._command_route, methods=["POST"]),
            Route("/sandbox/click", self._click_route, methods=["POST"]),
            Route("/sandbox/home", self._home_route, methods=["POST"]),
            Route("/sandbox/view/action", self._view_action_route, methods=["POST"]),
            Route("/sandbox/view/submit", self._view_submit_route, methods=["POST"]),
            Route("/sandbox/view/close", self._view_close_route, methods=["POST"]),
            Route("/sandbox/files/{file_id}", self._file_route),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ])

    async def _command_route(self, request: Request) -> Response:
        data = await _json_body(request)
        status, text = await self.sandbox.command(str(data.get("text", "")),
                                                  str(data.get("channel") or self.sandbox.channel))
        return JSONResponse({"ok": status == 200, "status": status, "error": "" if status == 200 else text},
                            status_code=400 if status == 400 else 200)

    async def _click_route(self, request: Request) -> Response:
        data = await _json_body(request)
        if not data.get("action_id"):
            return JSONResponse({"ok": False, "error": "action_id is required"}, status_code=400)
        if data.get("home"):
            status, _text = await self.sandbox.click_home(str(data["action_id"]), str(data.get("value", "")))
            return JSONResponse({"ok": status == 200, "status": status})
        status, _text = await self.sandbox.click(str(data.get("channel", "")), str(data.get("ts", "")),
                                         str(data["action_id"]), str(data.get("value", "")))
        return JSONResponse({"ok": status == 200, "status": status})

    async def _home_route(self, request: Request) -> Response:
        status, _text = await self.sandbox.open_home()
        return JSONResponse({"ok": status == 200, "status": status})

    async def _view_action_route(self, request: Request) -> Response:
        data = await _json_body(request)
        if not (data.get("view_id") and data.get("block_id") and data.get("action_id")):
            return JSONResponse({"ok": False, "error": "view_id, block_id and action_id are required"}, 400)
        status, text = await self.sandbox.view_action(str(data["view_id"]), str(data["block_id"]),
                                                      str(data["action_id"]), values_of(data.get("values")))
        return JSONResponse({"ok": status == 200, "status": status, "error": "" if status == 200 else text},
                            status_code=409 if status == 409 else 200)

    async def _view_submit_route(self, request: Request) -> Response:
        data = await _json_body(request)
        status, answer = await self.sandbox.submit_view(str(data.get("view_id", "")), values_of(data.get("values")))
        return JSONResponse({"ok": status == 200 and not answer.get("problem"), "status": status, **answer},
                            status_code=409 if status == 409 else 200)

    async def _view_close_route(self, request: Request) -> Response:
        data = await _json_body(request)
        self.sandbox.close_view(str(data.get("view_id", "")))
        return JSONResponse({"ok": True})

    async def _file_route(self, request: Request) -> Response:
        data = self.sandbox.api.files.get(request.path_params["file_id"])
        if data is None:
            return JSONResponse({"ok": False, "error": "file_not_found"}, status_code=404)
        return Response(data, media_type="image/png" if data.startswith(b"\x89PNG") else "application/octet-stream")


async def _json_body(request: Request) -> dict:
    try:
        data = await request.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
