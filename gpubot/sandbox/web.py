"""The web sandbox (`gpubot demo --web`): a local page that looks and behaves like a Slack channel for gpubot.

Nothing of the bot is re-implemented here. The real HTTP app (`Runtime.http_app()`) runs under uvicorn on a
loopback port; what a person types or clicks on the page is sent to its `/slack/events` as a signed Slack
request (gpubot/sandbox/requests.py), and what the bot sends back to Slack lands in the local stand-in of the
Web API (FakeSlackApi), whose messages, views and uploaded files the page shows. The page polls
`GET /sandbox/state`; commands, clicks and the Home tab go through `POST /sandbox/{command,click,home}` (a click
on Home says `home`, and is sent as Slack sends a click on the Home view). A modal the bot opens (views.open) shows
as a form over the page; its picks, Submit and Close go through `POST /sandbox/view/{action,submit,close}`
(gpubot/sandbox/modal.py). The page and those routes are gpubot/sandbox/page.py; this is what they call.
"""

from __future__ import annotations

import itertools
import threading
import time

import httpx
import uvicorn

from gpubot.runtime import Runtime
from gpubot.sandbox.modal import Values, answer_of, view_action_body, view_payload
from gpubot.sandbox.requests import (
    action_body,
    event_body,
    home_action_body,
    sign,
    slash_command_body,
    view_submission_body,
)
from gpubot.sandbox.slack_api import FakeSlackApi, SlackCall

__all__ = ["Sandbox", "serve_in_thread"]

NOT_A_COMMAND = "Commands start with /gpu — try /gpu help"
NO_MODAL = "That form is no longer open"


def serve_in_thread(app, port: int = 0, timeout: float = 20.0) -> tuple[uvicorn.Server, int]:
    """Serve an ASGI app on 127.0.0.1 from a daemon thread; returns the server and its port once it listens."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, lifespan="off"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the HTTP server did not start")
        time.sleep(0.02)
    return server, server.servers[0].sockets[0].getsockname()[1]


class Sandbox:
    """The page's server: turns typing and clicks into signed Slack requests and shows what reached Slack."""

    def __init__(self, runtime: Runtime, api: FakeSlackApi, signing_secret: str, user: str,
                 channel: str = "CGPU") -> None:
        self.runtime, self.api, self.secret = runtime, api, signing_secret
        self.user, self.channel = user, channel
        self.bot_url = ""
        # Messages kept from an earlier run of the demo show first, oldest first, as Slack would still show them.
        self._feed: list[dict] = sorted(({"kind": "message", "channel": channel, "ts": ts}
                                         for channel, messages in api.messages.items() for ts in messages),
                                        key=lambda entry: float(entry["ts"]))
        self._seen = 0  # how many of api.calls are already in the feed
        self._keys: dict[str, str] = {}  # response_url key -> the channel its reply shows in
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._bot_server: uvicorn.Server | None = None
        self._modal: dict | None = None  # the open modal: {"id": view id, "errors": {block_id: message}}

    # -- the real bot ------------------------------------------------------------------------------------
    def start_bot(self) -> str:
        """Serve the real gpubot HTTP app on a free loopback port; returns its URL."""
        self._bot_server, port = serve_in_thread(self.runtime.http_app())
        self.bot_url = f"http://127.0.0.1:{port}"
        return self.bot_url

    def stop_bot(self) -> None:
        """Stop the bot's HTTP server."""
        if self._bot_server:
            self._bot_server.should_exit = True

    async def _post(self, body: bytes, content_type: str = "application/x-www-form-urlencoded") -> httpx.Response:
        headers = {"Content-Type": content_type, **sign(self.secret, body)}
        async with httpx.AsyncClient(trust_env=False, timeout=15) as client:
            return await client.post(f"{self.bot_url}/slack/events", content=body, headers=headers)

    def _response_url(self, channel: str) -> str:
        key = f"web{next(self._ids)}"
        self._keys[key] = channel
        return self.api.response_url(key)

    # -- the feed: what each channel shows, in the order it happened -------------------------------------
    def _sync(self) -> None:
        """Turn the Web API calls that arrived since the last look into feed entries (call with the lock)."""
        calls = list(self.api.calls[self._seen:])
        self._seen += len(calls)
        for call in calls:
            entry = self._entry_of(call)
            if entry:
                self._feed.append(entry)

    def _entry_of(self, call: SlackCall) -> dict | None:
        args, result = call.args, call.result
        if call.method == "chat.postMessage" and result.get("ok"):
            return {"kind": "message", "channel": result["channel"], "ts": result["ts"]}
        if call.method == "response_url":
            return {"kind": "ephemeral", "channel": self._keys.get(args.get("_key", ""), self.channel),
                    "text": args.get("text", ""), "blocks": args.get("blocks") or []}
        if call.method == "views.open" and result.get("ok"):  # a form over the page, as Slack shows it
            self._modal = {"id": result.get("view", {}).get("id", ""), "errors": {}}
        if call.method == "files.completeUploadExternal" and result.get("ok"):
            return {"kind": "files", "channel": args.get("channel_id") or self.channel,
                    "text": args.get("initial_comment", ""),
                    "files": [{"url": f"/sandbox/files/{f['id']}", "title": f.get("title", "")}
                              for f in result.get("files", [])]}
        return None

    def _note(self, channel: str, kind: str, text: str) -> None:
        with self._lock:
            self._sync()
            self._feed.append({"kind": kind, "channel": channel, "text": text, "user": self.user})

    def state(self) -> dict:
        """Every channel's feed with messages as they stand now (updated in place), and the Home tab."""
        with self._lock:
            self._sync()
            feed: dict[str, list[dict]] = {self.channel: [], self.user: []}
            for n, entry in enumerate(self._feed):
                shown = {**entry, "id": n}
                if entry["kind"] == "message":
                    message = self.api.messages.get(entry["channel"], {}).get(entry["ts"], {})
                    shown.update(text=message.get("text", ""), blocks=message.get("blocks", []))
                feed.setdefault(_conversation(entry["channel"], self.user), []).append(shown)
        home = self.api.views.get(f"home:{self.user}")
        channels = [{"id": c, "name": _channel_name(c, self.channel, self.user)} for c in feed]
        modal = self._modal and {**self._modal, "view": self.api.views.get(self._modal["id"]),
                                 "hash": self.api.view_hashes.get(self._modal["id"], "")}
        return {"user": self.user, "channel": self.channel, "channels": channels, "feed": feed, "home": home,
                "modal": modal if modal and modal["view"] else None}

    # -- what the page asks for --------------------------------------------------------------------------
    async def command(self, text: str, channel: str) -> tuple[int, str]:
        """Send one typed `/gpu …` line as a signed slash command."""
        line = text.strip()
        if not (line == "/gpu" or line.startswith("/gpu ")):
            return 400, NOT_A_COMMAND
        self._note(channel, "user", line)
        body = slash_command_body(line.removeprefix("/gpu").strip(), user=self.user, channel=channel,
                                  response_url=self._response_url(channel))
        return self._answered(channel, await self._post(body))

    async def click(self, channel: str, ts: str, action_id: str, value: str) -> tuple[int, str]:
        """Send one button click as a signed block_actions payload."""
        body = action_body(action_id, value, user=self.user, channel=channel, message_ts=ts,
                           response_url=self._response_url(channel))
        return self._answered(channel, await self._post(body))

    async def click_home(self, action_id: str, value: str) -> tuple[int, str]:
        """Send one click on the Home tab as Slack does: block_actions from the Home view, no response_url (the
        bot answers by DM and publishes Home again)."""
        return self._answered(self.user, await self._post(home_action_body(action_id, value, user=self.user)))

    async def open_home(self) -> tuple[int, str]:
        """Deliver app_home_opened, as Slack does when the Home tab is opened."""
        event = {"type": "app_home_opened", "user": self.user, "channel": "D" + self.user.lstrip("U"),
                 "tab": "home", "event_ts": f"{time.time():.6f}"}
        response = await self._post(event_body(event), "application/json")
        return self._answered(self.user, response)

    # -- the open modal ------------------------------------------------------------------------------------
    def _open_view(self, view_id: str, values: Values) -> dict | None:
        """The open modal's view as a payload carries it (with `values` as its state), or None when it is not open."""
        with self._lock:
            self._sync()
            if not self._modal or self._modal["id"] != view_id or view_id not in self.api.views:
                return None
            return view_payload(view_id, self.api.views[view_id], self.api.view_hashes.get(view_id, ""), values)

    async def view_action(self, view_id: str, block_id: str, action_id: str, values: Values) -> tuple[int, str]:
        """A pick in one of the modal's `dispatch_action` inputs, as a signed block_actions on the view."""
        view = self._open_view(view_id, values)
        if view is None:
            return 409, NO_MODAL
        response = await self._post(view_action_body(view, block_id, action_id, user=self.user))
        return response.status_code, response.text

    async def submit_view(self, view_id: str, values: Values) -> tuple[int, dict]:
        """Submit the modal as a signed view_submission; close it, or show the errors the app answered."""
        view = self._open_view(view_id, values)
        if view is None:
            return 409, {"error": NO_MODAL}
        response = await self._post(view_submission_body(view, user=self.user))
        answer = answer_of(response.status_code, response.text)
        with self._lock:
            if answer.problem:
                self._modal = {"id": view_id, "errors": {}}
                self._feed.append({"kind": "error", "channel": self.channel, "text": answer.problem})
            elif answer.closed:
                self._close(view_id)
            elif answer.view is not None:
                self.api.views[view_id] = answer.view
                self._modal = {"id": view_id, "errors": {}}
            else:
                self._modal = {"id": view_id, "errors": answer.errors}
        return response.status_code, {"closed": answer.closed, "errors": answer.errors, "problem": answer.problem}

    def close_view(self, view_id: str) -> None:
        """Close the modal (Cancel, ×): Slack forgets the view, so a late views.update of it is `not_found`."""
        with self._lock:
            self._close(view_id)

    def _close(self, view_id: str) -> None:
        if self._modal and self._modal["id"] == view_id:
            self._modal = None
        self.api.close_view(view_id)

    def _answered(self, channel: str, response: httpx.Response) -> tuple[int, str]:
        if response.status_code != 200:
            self._note(channel, "error", f"gpubot answered HTTP {response.status_code}: {response.text[:300]}")
        elif response.text.strip():
            self._note(channel, "ephemeral", response.text)
        return response.status_code, response.text


def _conversation(channel: str, user: str) -> str:
    """DMs to the sandbox user (to the user id, or its D… channel) show in one conversation."""
    return user if channel in (user, "D" + user.lstrip("U")) else channel


def _channel_name(channel: str, main: str, user: str) -> str:
    if channel == main:
        return "#gpu"
    if channel == user:
        return "gpubot (DM)"
    return f"DM to {channel}" if channel.startswith(("U", "D", "W")) else f"#{channel.lower()}"
