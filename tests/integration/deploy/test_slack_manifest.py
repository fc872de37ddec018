"""The Slack app manifests validate against the manifest schema (the subset gpubot uses) and match the bot."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
SCHEMA = json.loads((DEPLOY / "slack" / "manifest.schema.json").read_text())
HTTP = yaml.safe_load((DEPLOY / "slack" / "manifest.yaml").read_text())
SOCKET = yaml.safe_load((DEPLOY / "slack" / "manifest.socket.yaml").read_text())
URL = "https://gpubot.example.com/slack/events"


def _validate(manifest: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(manifest)


@pytest.mark.parametrize("manifest", [HTTP, SOCKET], ids=["http", "socket"])
def test_manifest_validates(manifest):
    _validate(manifest)


@pytest.mark.parametrize(("path", "bad"), [
    (("features", "slash_commands", 0, "command"), "gpu"),
    (("features", "slash_commands", 0, "command"), "/" + "g" * 32),
    (("features", "slash_commands", 0, "description"), "d" * 2001),
    (("features", "slash_commands", 0, "usage_hint"), "u" * 1001),
    (("features", "bot_user", "display_name"), "n" * 81),
    (("settings", "event_subscriptions", "bot_events"), [f"event_{i}" for i in range(101)]),
])
def test_schema_rejects_what_slack_rejects(path, bad):
    manifest = copy.deepcopy(HTTP)
    target = manifest
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = bad
    with pytest.raises(jsonschema.ValidationError):
        _validate(manifest)


def test_http_manifest_sends_everything_to_slack_events():
    settings = HTTP["settings"]
    assert HTTP["features"]["slash_commands"][0]["url"] == URL
    assert settings["event_subscriptions"]["request_url"] == settings["interactivity"]["request_url"] == URL
    assert settings["socket_mode_enabled"] is False


def test_socket_manifest_has_no_urls_and_otherwise_matches():
    assert SOCKET["settings"]["socket_mode_enabled"] is True
    assert "url" not in json.dumps(SOCKET)
    http = copy.deepcopy(HTTP)
    del http["features"]["slash_commands"][0]["url"]
    del http["settings"]["event_subscriptions"]["request_url"]
    del http["settings"]["interactivity"]["request_url"]
    http["settings"]["socket_mode_enabled"] = True
    assert http == SOCKET


def test_manifest_matches_what_the_bot_listens_for():
    command = HTTP["features"]["slash_commands"][0]
    assert command["command"] == "/gpu" and command["usage_hint"]
    assert HTTP["features"]["app_home"]["home_tab_enabled"] is True
    assert HTTP["settings"]["interactivity"]["is_enabled"] is True
    assert "app_home_opened" in HTTP["settings"]["event_subscriptions"]["bot_events"]
    assert {"commands", "chat:write", "chat:write.public", "im:write", "users:read", "files:write",
            "channels:history", "groups:history", "im:history"} <= set(
        HTTP["oauth_config"]["scopes"]["bot"])
