"""What the local stand-in for Slack keeps and answers (gpubot/sandbox/slack_api.py serves it): the messages of
every conversation as Slack would show them (posted, updated in place), modals and Home views, uploaded files, and
each Web API method gpubot uses answered as Slack answers it."""

from __future__ import annotations

import itertools
import json
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["SlackWorkspace"]


class SlackWorkspace:
    """A workspace's state and the answers of the Web API methods gpubot calls (`answer`); no HTTP here."""

    def __init__(self, user_zones: dict[str, str] | None = None, keep_in: Path | None = None,
                 user_locales: dict[str, str] | None = None) -> None:
        self.messages: dict[str, dict[str, dict]] = {}  # channel -> ts -> message
        self._keep_in = keep_in  # a JSON file that keeps the messages across restarts (the demo), like Slack does
        if keep_in and keep_in.exists():
            self.messages = json.loads(keep_in.read_text(encoding="utf-8")).get("messages", {})
        self.views: dict[str, dict] = {}
        self.view_hashes: dict[str, str] = {}  # view id → its current hash (views.update checks it, as Slack does)
        self.files: dict[str, bytes] = {}  # file id -> uploaded bytes
        self.user_zones = user_zones or {}
        self.user_locales = user_locales or {}  # user → Slack locale (`zh-CN`); everyone else reads `en-US`
        self.gone: set[str] = set()  # channels archived or closed to the bot: posting answers channel_not_found
        self._ts = itertools.count(1)
        self._lock = threading.RLock()  # re-entrant: wait_for predicates may call calls_to

    @property
    def base(self) -> str:
        """Where the workspace is served (http://127.0.0.1:PORT): upload URLs point there."""
        raise NotImplementedError

    def answer(self, method: str, args: dict) -> dict:
        """What Slack answers `method` called with `args` (ok for a method gpubot calls but this fake keeps nothing
        of)."""
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


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value
