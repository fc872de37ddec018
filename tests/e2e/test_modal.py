"""`/gpu book` with no arguments, over Slack's wire protocol, with a cloud slow to quote: the modal opens at once
(Slack's trigger_id lives 3 s) and the quote follows with views.update."""

from __future__ import annotations

import json
import secrets
import time
from urllib.parse import urlencode

import pytest

from tests.e2e.server_kit import RunningBot, config, offer, serving, settle, sim

LATENCY = 2.0  # seconds every call to the simulated cloud takes, probes included
CONFIG = config(acquire={"offer_cache": "0s"},  # every quote probes the cloud
                providers={"sim": sim(offer(price=2.42), offer("h100", price=3.99), latency=f"{LATENCY:g}s")})


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> RunningBot:
    """gpubot serve with a slow simulated cloud and a fake Slack Web API."""
    with serving(tmp_path_factory.mktemp("modal"), CONFIG) as running:
        yield running


def _calls(bot: RunningBot, method: str, view_id: str | None = None) -> list:
    return [c for c in bot.api.calls_to(method) if view_id is None or c.args.get("view_id") == view_id]


def _quote_line(view: dict) -> str:
    return next(b["text"]["text"] for b in view["blocks"] if b.get("block_id") == "quote")


def _open(bot: RunningBot, trigger: str):
    sent = time.monotonic()
    bot.command("book", user="UDAVE", trigger_id=trigger)
    assert bot.api.wait_for(lambda calls: any(c.args.get("trigger_id") == trigger for c in calls), 10)
    [opened] = [c for c in bot.api.calls_to("views.open") if c.args["trigger_id"] == trigger]
    return sent, opened


def test_the_modal_opens_before_any_cloud_is_asked_and_the_quote_follows(bot: RunningBot) -> None:
    sent, opened = _open(bot, "trig.modal-at-once")
    view_id = opened.result["view"]["id"]
    assert opened.at - sent < LATENCY, "views.open waited for a probe"
    assert _quote_line(opened.args["view"] if isinstance(opened.args["view"], dict)
                       else json.loads(opened.args["view"])) == "Looking up prices…"
    assert bot.api.wait_for(lambda _seen: _calls(bot, "views.update", view_id), 10)
    [update] = _calls(bot, "views.update", view_id)
    assert update.at - opened.at >= LATENCY * 0.95, "the probe began before the modal was open"
    assert update.args["hash"] == opened.result["view"]["hash"] and update.result["ok"]
    assert "$2.42/GPU-h on sim" in _quote_line(bot.api.views[view_id])


def test_a_choice_made_before_the_first_quote_keeps_its_own_quote(bot: RunningBot) -> None:
    _sent, opened = _open(bot, "trig.modal-quick-pick")
    view = {**opened.result["view"], "state": {"values": {
        "gpu": {"gpu_pick": {"type": "static_select", "selected_option": {"value": "h100"}}},
        "count": {"count_pick": {"type": "static_select", "selected_option": {"value": "2"}}},
        "duration": {"duration_text": {"type": "plain_text_input", "value": "3h"}},
        "project": {"project_text": {"type": "plain_text_input", "value": None}}}}}
    assert bot.post(_pick_body(view, "h100", user="UDAVE")).status_code == 200
    view_id = view["id"]
    assert bot.api.wait_for(lambda _seen: any(c.result.get("ok") for c in _calls(bot, "views.update", view_id)),
                            3 * LATENCY + 5)
    settle(bot)  # both picks' work done: the first quote (a100) has come and gone
    assert "H100" in _quote_line(bot.api.views[view_id]) and "$3.99/GPU-h" in _quote_line(bot.api.views[view_id])


def _state(gpu: str, count: str) -> dict:
    """A modal's state.values with `gpu` and `count` selected."""
    return {"values": {
        "gpu": {"gpu_pick": {"type": "static_select", "selected_option": {"value": gpu}}},
        "count": {"count_pick": {"type": "static_select", "selected_option": {"value": count}}},
        "duration": {"duration_text": {"type": "plain_text_input", "value": "4h"}},
        "project": {"project_text": {"type": "plain_text_input", "value": None}}}}


def _first_quote(bot: RunningBot, trigger: str) -> tuple[dict, str]:
    """Open a modal and wait for its first quote; the view as opened and the hash after that quote."""
    _sent, opened = _open(bot, trigger)
    view_id = opened.result["view"]["id"]
    assert bot.api.wait_for(lambda _seen: any(c.result.get("ok") for c in _calls(bot, "views.update", view_id)),
                            LATENCY + 10)
    return opened.result["view"], bot.api.view_hashes[view_id]


def test_a_count_picked_before_the_gpus_quote_came_shows_the_quote_of_both(bot: RunningBot) -> None:
    """GPU, then count, both before the GPU's quote arrives: Slack sends both picks with the same hash; the modal
    ends showing the quote of what is selected (2× H100), not of the first pick (1× H100)."""
    opened, now_hash = _first_quote(bot, "trig.modal-gpu-then-count")
    gpu_pick = {**opened, "hash": now_hash, "state": _state("h100", "1")}
    count_pick = {**opened, "hash": now_hash, "state": _state("h100", "2")}
    assert bot.post(_pick_body(gpu_pick, "h100", user="UDAVE")).status_code == 200
    assert bot.post(_pick_body(count_pick, "2", user="UDAVE", action="count_pick")).status_code == 200
    view_id = opened["id"]
    assert bot.api.wait_for(lambda _seen: "2× H100" in _quote_line(bot.api.views[view_id]), 3 * LATENCY + 10), \
        _quote_line(bot.api.views[view_id])
    settle(bot)
    assert "2× H100" in _quote_line(bot.api.views[view_id]) and "$3.99/GPU-h" in _quote_line(bot.api.views[view_id])


def test_a_pick_sent_with_the_hash_from_before_the_first_quote_is_shown_after_a_conflict(bot: RunningBot) -> None:
    """The person picked while the first quote was being sent: Slack stamped the pick with the opening hash, the
    first quote then changed it, so the pick's quote meets `hash_conflict`; it is sent again with the newer hash."""
    opened, _now_hash = _first_quote(bot, "trig.modal-stale-hash")
    view_id = opened["id"]
    before = len(_calls(bot, "views.update", view_id))
    assert bot.post(_pick_body({**opened, "state": _state("h100", "2")}, "h100", user="UDAVE")).status_code == 200
    assert bot.api.wait_for(lambda _seen: "2× H100" in _quote_line(bot.api.views[view_id]), 2 * LATENCY + 10), \
        _quote_line(bot.api.views[view_id])
    conflicted, retried = _calls(bot, "views.update", view_id)[before:]
    assert conflicted.result["error"] == "hash_conflict" and conflicted.args["hash"] == opened["hash"]
    assert retried.result["ok"] and retried.args["hash"] != opened["hash"]


def _pick_body(view: dict, value: str, user: str, action: str = "gpu_pick") -> bytes:
    """A block_actions payload for a select (GPU or count) of an open modal, as Slack sends it (with the view's
    hash)."""
    payload = {"type": "block_actions", "team": {"id": "T0FAKE", "domain": "fake"},
               "user": {"id": user, "team_id": "T0FAKE"}, "api_app_id": "A0FAKE", "token": "deprecated",
               "trigger_id": f"trig.{secrets.token_hex(6)}", "container": {"type": "view", "view_id": view["id"]},
               "view": view, "actions": [{"type": "static_select", "action_id": action,
                                          "block_id": action.removesuffix("_pick"),
                                          "selected_option": {"value": value}, "action_ts": f"{time.time():.6f}"}]}
    return urlencode({"payload": json.dumps(payload)}).encode()
