"""The sandbox's modal as Slack handles one: the page's values become the view's `state.values` that the bot's
own modal reads, a pick becomes a block_actions on the view, and the app's answer to Submit is read as Slack
reads it (close, errors on their fields, update)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from gpubot.bot.listeners.modal import _values, book_modal

from gpubot.sandbox.modal import answer_of, values_of, view_action_body, view_payload, view_state

VIEW = book_modal(project="p1").to_dict()


def test_the_pages_values_are_the_state_the_bots_modal_reads():
    values = {"gpu": {"gpu_pick": "h100"}, "count": {"count_pick": "2"}, "duration": {"duration_text": "90m"},
              "project": {"project_text": None}}
    state = view_state(VIEW, values)
    picked = state["values"]["gpu"]["gpu_pick"]
    assert picked["type"] == "static_select" and picked["selected_option"]["value"] == "h100"
    assert picked["selected_option"]["text"]["text"] == "H100 80GB"  # the option as the view offered it
    assert state["values"]["project"]["project_text"] == {"type": "plain_text_input", "value": None}  # cleared
    assert _values({"state": state}) == {"gpu": "h100", "count": "2", "duration": "90m", "project": ""}


def test_an_input_the_page_did_not_send_keeps_its_initial_value_and_an_unknown_option_is_none():
    state = view_state(VIEW, {"gpu": {"gpu_pick": "no-such-gpu"}})["values"]
    assert state["gpu"]["gpu_pick"]["selected_option"] is None
    assert state["count"]["count_pick"]["selected_option"]["value"] == "1"
    assert state["duration"]["duration_text"]["value"] == "4h" and state["project"]["project_text"]["value"] == "p1"


def test_a_pick_is_a_block_actions_on_the_view_with_its_hash():
    view = view_payload("V1", VIEW, "h.1", {"count": {"count_pick": "4"}})
    payload = json.loads(parse_qs(view_action_body(view, "count", "count_pick", user="U1").decode())["payload"][0])
    assert payload["type"] == "block_actions" and payload["container"] == {"type": "view", "view_id": "V1"}
    assert payload["view"]["hash"] == "h.1" and payload["view"]["callback_id"] == "gpu_book_modal"
    (action,) = payload["actions"]
    assert (action["type"], action["block_id"], action["selected_option"]["value"]) == ("static_select", "count", "4")


def test_the_apps_answer_to_a_submission_is_read_as_slack_reads_it():
    assert answer_of(200, "").closed
    errors = answer_of(200, json.dumps({"response_action": "errors", "errors": {"duration": "Enter one length"}}))
    assert not errors.closed and errors.errors == {"duration": "Enter one length"}
    assert answer_of(200, json.dumps({"response_action": "clear"})).closed
    assert answer_of(200, json.dumps({"response_action": "update", "view": {"blocks": []}})).view == {"blocks": []}
    assert answer_of(500, "boom").problem == "gpubot answered HTTP 500: boom"
    assert "Slack refuses" in answer_of(200, "not json").problem


def test_values_from_the_page_are_taken_as_text_and_anything_else_dropped():
    assert values_of({"a": {"x": 1, "y": None}, "b": "not a block"}) == {"a": {"x": "1", "y": None}}
    assert values_of(["nope"]) == {}
