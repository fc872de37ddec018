"""Slack requests as Slack sends them: form-encoded bodies signed with the app's signing secret."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from urllib.parse import urlencode

__all__ = ["action_body", "event_body", "home_action_body", "sign", "slash_command_body", "view_submission_body"]


def sign(secret: str, body: bytes, timestamp: int | None = None) -> dict[str, str]:
    """Headers that carry a valid Slack v0 signature of exactly `body`."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


def slash_command_body(text: str, *, user: str, channel: str, response_url: str, command: str = "/gpu",
                       trigger_id: str | None = None, team: str = "T0FAKE") -> bytes:
    """A slash-command form body."""
    return urlencode({
        "token": "deprecated", "team_id": team, "team_domain": "fake", "channel_id": channel,
        "channel_name": "gpu", "user_id": user, "user_name": user.lower(), "command": command, "text": text,
        "api_app_id": "A0FAKE", "is_enterprise_install": "false", "response_url": response_url,
        "trigger_id": trigger_id or f"trig.{secrets.token_hex(6)}",
    }).encode()


def action_body(action_id: str, value: str, *, user: str, channel: str, message_ts: str, response_url: str,
                team: str = "T0FAKE") -> bytes:
    """A block_actions payload for one button click."""
    payload = {
        "type": "block_actions", "user": {"id": user, "username": user.lower(), "team_id": team},
        "api_app_id": "A0FAKE", "token": "deprecated", "trigger_id": f"trig.{secrets.token_hex(6)}",
        "team": {"id": team, "domain": "fake"}, "channel": {"id": channel, "name": "gpu"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel},
        "message": {"ts": message_ts}, "response_url": response_url,
        "actions": [{"type": "button", "action_id": action_id, "block_id": "b", "value": value,
                     "action_ts": str(time.time())}],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def home_action_body(action_id: str, value: str, *, user: str, view_id: str = "VHOME", team: str = "T0FAKE"
                     ) -> bytes:
    """A block_actions payload for one button on the App Home tab: its container is the Home view; there is no
    channel, message or response_url, as Slack sends it."""
    payload = {
        "type": "block_actions", "user": {"id": user, "username": user.lower(), "team_id": team},
        "api_app_id": "A0FAKE", "token": "deprecated", "trigger_id": f"trig.{secrets.token_hex(6)}",
        "team": {"id": team, "domain": "fake"}, "container": {"type": "view", "view_id": view_id},
        "view": {"id": view_id, "type": "home", "team_id": team, "state": {"values": {}}, "hash": "1.home"},
        "actions": [{"type": "button", "action_id": action_id, "block_id": "b", "value": value,
                     "action_ts": str(time.time())}],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def view_submission_body(view: dict, *, user: str, team: str = "T0FAKE") -> bytes:
    """A view_submission payload."""
    payload = {"type": "view_submission", "team": {"id": team, "domain": "fake"},
               "user": {"id": user, "team_id": team}, "api_app_id": "A0FAKE", "token": "deprecated",
               "trigger_id": f"trig.{secrets.token_hex(6)}", "view": view, "response_urls": []}
    return urlencode({"payload": json.dumps(payload)}).encode()


def event_body(event: dict, *, team: str = "T0FAKE", event_id: str | None = None) -> bytes:
    """An Events API callback (JSON)."""
    return json.dumps({"token": "deprecated", "team_id": team, "api_app_id": "A0FAKE", "type": "event_callback",
                       "event_id": event_id or f"Ev{secrets.token_hex(5)}", "event_time": int(time.time()),
                       "event": event}).encode()
