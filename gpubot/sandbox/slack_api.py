"""A local stand-in for the Slack Web API (and response_url), served on 127.0.0.1.

The terminal demo, the web sandbox and the tests point the bot's WebClient at it (SLACK_API_URL). It keeps
every call it received and the messages as Slack would show them (posted, updated in place, ephemeral).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

__all__ = ["FakeSlackApi", "SlackCall"]


@dataclass
class SlackCall:
    """One call the bot made: Web API method (or `response_url`) and its arguments."""

    method: str
    args: dict
    headers: dict
    at: float = field(default_factory=time.monotonic)
    result: dict = field(default_factory=dict)  # what the fake answered (e.g. the ts of a posted message)


class FakeSlackApi:
    """Records calls and answers like Slack does for the methods gpubot uses."""

    def __init__(self, user_zones: dict[str, str] | None = None, keep_in: Path | None = None,
                 user_locales: dict[str, str] | None = None) -> None:
        self.calls: list[SlackCall] = []
        self.messages: dict[str, dict[str, dict]] = {}  # channel -> ts -> message
        self._keep_in = keep_in  # a JSON file that keeps the messages across restarts (the demo), like Slack does
        if keep_in and keep_in.exists():
            self.messages = json.loads(keep_in.read_text(encoding="utf-8")).get("messages", {})
        self.views: dict[str, dict] = {}
        self.view_hashes: dict[str, str] = {}  # view id → its current hash (views.update checks it, as Slack does)
        self.files: dict[str, bytes] = {}  # file id -> uploaded bytes
        self.user_zones = user_zones or {}
        self.user_locales = user_locales or {}  # user → Slack locale (`zh-CN`); everyone else reads `en-US`
        self.rate_limits: dict[str, list[int]] = {}  # method -> [remaining 429s, Retry-After]
        self.down: set[str] = set()  # Web API methods answered 503 (an outage), "*" for every method
        self.failing: dict[str, int] = {}  # channel -> how many more messages posted to it are answered 503
        self.gone: set[str] = set()  # channels archived or closed to the bot: posting answers channel_not_found
        self.refusing: dict[str, str] = {}  # method -> the Slack error it answers (ok: false), e.g. missing_scope
        self.invalid_tokens: set[str] = set()  # tokens answered invalid_auth (revoked, or another workspace's)
        # Called with each call Slack took, before its answer is sent: a test kills the caller there (the message
        # is in Slack, the caller never hears it was).
        self.after_accept: Callable[[SlackCall], None] | None = None
        self.refused = 0  # calls answered 503 or 429
        self._ts = itertools.count(1)
        self._lock = threading.RLock()  # re-entrant: wait_for predicates may call calls_to
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
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        return handler(args) if handler else {"ok": True}

    def _next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    def _chat_postMessage(self, args: dict) -> dict:
        channel = args.get("channel") or ""
        if not channel or channel in self.gone:
            return {"ok": False, "error": "channel_not_found"}
        ts = self._next_ts()
        message = {"ts": ts, "text": args.get("text", ""), "blocks": _json(args.get("blocks")) or []}
        if args.get("metadata"):
            message["metadata"] = _json(args["metadata"])
        self.messages.setdefault(channel, {})[ts] = message
        self._keep()
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _chat_update(self, args: dict) -> dict:
        channel, ts = self._stored(args.get("channel", "")), args.get("ts", "")
        if ts not in self.messages.get(channel, {}):
            return {"ok": False, "error": "message_not_found"}
        self.messages[channel][ts].update(text=args.get("text", ""), blocks=_json(args.get("blocks")) or [])
        if args.get("metadata"):  # as Slack does: an update may replace the message's metadata
            self.messages[channel][ts]["metadata"] = _json(args["metadata"])
        self._keep()
        return {"ok": True, "channel": channel, "ts": ts}

    def _keep(self) -> None:
        """Write the messages to the keep file (whole, then renamed into place: a crash leaves the old one)."""
        if self._keep_in:
            partial = self._keep_in.with_name(self._keep_in.name + ".partial")
            partial.write_text(json.dumps({"messages": self.messages}, ensure_ascii=False), encoding="utf-8")
            partial.replace(self._keep_in)

    def _auth_test(self, args: dict) -> dict:
        return {"ok": True, "user_id": "UBOT", "bot_id": "BBOT", "team_id": "T0FAKE", "team": "Fake"}

    def _users_info(self, args: dict) -> dict:
        user = args.get("user", "")
        found = {"id": user}
        if user in self.user_zones:  # a person with no zone here gets the team's time zone
            found["tz"] = self.user_zones[user]
        if str(args.get("include_locale", "")).lower() in ("true", "1"):  # Slack gives the locale only when asked
            found["locale"] = self.user_locales.get(user, "en-US")
        return {"ok": True, "user": found}

    def _conversations_open(self, args: dict) -> dict:
        return {"ok": True, "channel": {"id": "D" + str(args.get("users", "")).lstrip("U")}}

    def _stored(self, channel: str) -> str:
        """Where a conversation's messages are kept here: a DM id (`D…`, from conversations.open) is its person's
        (this fake keeps DMs under the user id they were posted to)."""
        person = "U" + channel[1:]
        return person if channel[:1] == "D" and person in self.messages else channel

    def _conversations_history(self, args: dict) -> dict:
        """Newest first, `limit` of them (Slack's default 100); a message's metadata only with
        include_all_metadata, as Slack does."""
        channel = args.get("channel", "")
        if channel[:1] in ("U", "W"):
            return {"ok": False, "error": "channel_not_found"}  # history takes a conversation id, not a user's
        with_metadata = str(args.get("include_all_metadata", "")).lower() in ("1", "true")
        newest = sorted(self.messages.get(self._stored(channel), {}).values(), key=lambda m: m["ts"], reverse=True)
        shown = [m if with_metadata else {k: v for k, v in m.items() if k != "metadata"}
                 for m in newest[:int(args.get("limit") or 100)]]
        return {"ok": True, "messages": shown, "has_more": len(newest) > len(shown)}

    def _views_open(self, args: dict) -> dict:
        view_id = f"V{next(self._ts):06d}"
        return self._store_view(view_id, _json(args.get("view")) or {})

    def _views_update(self, args: dict) -> dict:
        """Slack's views.update: `not_found` for an unknown view, `hash_conflict` when the hash sent is not the
        view's current one (the view was updated since the caller saw it); without a hash, it always applies."""
        view_id = args.get("view_id", "")
        if view_id not in self.views:
            return {"ok": False, "error": "not_found"}
        if args.get("hash") and args["hash"] != self.view_hashes[view_id]:
            return {"ok": False, "error": "hash_conflict"}
        return self._store_view(view_id, _json(args.get("view")) or {})

    def _store_view(self, view_id: str, view: dict) -> dict:
        self.views[view_id] = view
        self.view_hashes[view_id] = f"{time.time():.0f}.{next(self._ts):08d}"
        return {"ok": True, "view": {"id": view_id, **view, "hash": self.view_hashes[view_id]}}

    def close_view(self, view_id: str) -> None:
        """A person closed the modal (Submit accepted, Cancel): Slack forgets it, views.update answers not_found."""
        with self._lock:
            self.views.pop(view_id, None)
            self.view_hashes.pop(view_id, None)

    def _views_publish(self, args: dict) -> dict:
        self.views["home:" + args.get("user_id", "")] = _json(args.get("view")) or {}
        return {"ok": True, "view": {"id": "VHOME"}}

    def _files_getUploadURLExternal(self, args: dict) -> dict:
        file_id = f"F{next(self._ts):06d}"
        return {"ok": True, "upload_url": f"{self.base}/upload/{file_id}", "file_id": file_id}

    def _file_upload(self, args: dict) -> dict:
        self.files[args["_file_id"]] = args["_data"]
        return {"ok": True}

    def _files_completeUploadExternal(self, args: dict) -> dict:
        listed = _json(args.get("files")) or []
        if not args.get("channel_id") and not args.get("channels"):
            return {"ok": False, "error": "invalid_arguments"}
        # Slack documents `channel_id` as a channel's id and only `channels` as taking user ids too; a channel
        # gone or closed to the bot takes no file, as it takes no message.
        channel_id = str(args.get("channel_id") or "")
        if channel_id[:1] in ("U", "W") or channel_id in self.gone:
            return {"ok": False, "error": "channel_not_found"}
        missing = [f.get("id") for f in listed if f.get("id") not in self.files]
        if missing or not listed:
            return {"ok": False, "error": "file_not_found"}
        return {"ok": True, "files": [{"id": f["id"], "title": f.get("title", "")} for f in listed]}


def _decode(raw: bytes, content_type: str) -> dict:
    if "json" in content_type:
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}
    if "form" in content_type:
        return {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
    return {"_raw_size": len(raw)}


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _send(http: BaseHTTPRequestHandler, status: int, body: dict, headers: dict | None = None) -> None:
    data = json.dumps(body).encode()
    http.send_response(status)
    http.send_header("Content-Type", "application/json")
    http.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        http.send_header(key, value)
    http.end_headers()
    http.wfile.write(data)
