"""The sandbox's modal, as Slack handles one: what a person chose in the form becomes the view's `state.values`,
a pick in a `dispatch_action` input is a signed `block_actions` on the view, Submit a signed `view_submission`,
and the app's answer to it (an empty 200: close; `response_action: errors`: show them on their fields;
`update` / `clear`) is read the way Slack reads it. Nothing of the bot's modal is imitated: its blocks are shown
as the bot sent them (views.open / views.update, kept by FakeSlackApi)."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

__all__ = ["ModalAnswer", "answer_of", "input_elements", "values_of", "view_action_body", "view_payload", "view_state"]

Values = dict[str, dict[str, str | None]]  # block_id → action_id → what the page holds (an option's value, text)


@dataclass(frozen=True)
class ModalAnswer:
    """What the app's answer to a submission does to the modal: close it, show errors, or replace it."""

    closed: bool = False
    errors: dict[str, str] = field(default_factory=dict)
    view: dict | None = None  # `response_action: update`: the view it becomes
    problem: str = ""  # not an answer Slack takes (HTTP error, unknown response_action)


def values_of(data: object) -> Values:
    """What the page sent as the form's values: block_id → action_id → text (anything else is dropped)."""
    if not isinstance(data, dict):
        return {}
    return {str(block): {str(action): None if value is None else str(value) for action, value in actions.items()}
            for block, actions in data.items() if isinstance(actions, dict)}


def input_elements(view: dict) -> dict[tuple[str, str], dict]:
    """The view's input elements by (block_id, action_id)."""
    found = {}
    for block in view.get("blocks") or []:
        element = block.get("element") if block.get("type") == "input" else None
        if element and block.get("block_id") and element.get("action_id"):
            found[(block["block_id"], element["action_id"])] = element
    return found


def _option(element: dict, value: str) -> dict | None:
    options = list(element.get("options") or [])
    for group in element.get("option_groups") or []:
        options += group.get("options") or []
    return next((o for o in options if o.get("value") == value), None)


def view_state(view: dict, values: Values) -> dict:
    """`state.values` as Slack sends it for the view's inputs holding `values` (an input the page did not send
    keeps its initial value; an option not offered counts as none chosen)."""
    state: dict[str, dict] = {}
    for (block, action), element in input_elements(view).items():
        kind = element.get("type", "")
        sent = action in (values.get(block) or {})  # None: sent empty (a field cleared, nothing chosen)
        held = (values.get(block) or {}).get(action)
        if kind in ("static_select", "external_select", "radio_buttons"):
            chosen = (_option(element, held) if held else None) if sent else element.get("initial_option")
            state.setdefault(block, {})[action] = {"type": kind, "selected_option": chosen}
        elif kind == "checkboxes":
            picked = [o for o in (_option(element, v) for v in (held or "").split("\n") if v) if o] \
                if sent else element.get("initial_options") or []
            state.setdefault(block, {})[action] = {"type": kind, "selected_options": picked}
        else:  # plain_text_input, number_input, email/url inputs: the text as typed, None when empty
            text = held if sent else element.get("initial_value")
            state.setdefault(block, {})[action] = {"type": kind, "value": text or None}
    return {"values": state}


def view_payload(view_id: str, view: dict, view_hash: str, values: Values, team: str = "T0FAKE") -> dict:
    """The `view` of a view_submission or block_actions payload: the view as opened, its hash and state."""
    return {"id": view_id, "team_id": team, "type": view.get("type", "modal"), "blocks": view.get("blocks") or [],
            "private_metadata": view.get("private_metadata", ""), "callback_id": view.get("callback_id", ""),
            "state": view_state(view, values), "hash": view_hash, "title": view.get("title"),
            "close": view.get("close"), "submit": view.get("submit"), "root_view_id": view_id,
            "previous_view_id": None, "app_id": "A0FAKE", "bot_id": "BBOT", "external_id": ""}


def view_action_body(payload_view: dict, block_id: str, action_id: str, *, user: str, team: str = "T0FAKE") -> bytes:
    """A block_actions payload for a pick in one of a modal's inputs (`dispatch_action`)."""
    state = payload_view["state"]["values"].get(block_id, {}).get(action_id, {})
    action = {"type": state.get("type", ""), "action_id": action_id, "block_id": block_id,
              "action_ts": f"{time.time():.6f}"}
    action.update({k: v for k, v in state.items() if k != "type"})
    payload = {"type": "block_actions", "user": {"id": user, "username": user.lower(), "team_id": team},
               "api_app_id": "A0FAKE", "token": "deprecated", "trigger_id": f"trig.{secrets.token_hex(6)}",
               "team": {"id": team, "domain": "fake"}, "container": {"type": "view", "view_id": payload_view["id"]},
               "view": payload_view, "actions": [action]}
    return urlencode({"payload": json.dumps(payload)}).encode()


def answer_of(status: int, body: str) -> ModalAnswer:
    """What Slack does with the app's answer to a view_submission."""
    if status != 200:
        return ModalAnswer(problem=f"gpubot answered HTTP {status}: {body[:300]}")
    if not body.strip():
        return ModalAnswer(closed=True)
    try:
        answer = json.loads(body)
    except ValueError:
        return ModalAnswer(problem=f"gpubot answered a submission with {body[:300]!r}, which Slack refuses")
    action = answer.get("response_action") if isinstance(answer, dict) else None
    if action == "errors":
        return ModalAnswer(errors={str(k): str(v) for k, v in (answer.get("errors") or {}).items()})
    if action in ("clear", None) and isinstance(answer, dict) and not answer.get("view"):
        return ModalAnswer(closed=True)
    if action in ("update", "push") and isinstance(answer.get("view"), dict):
        return ModalAnswer(view=answer["view"])
    return ModalAnswer(problem=f"gpubot answered a submission with response_action {action!r}")
