"""No command lost to Slack's authorisation (issue #27), against `gpubot serve` and the fake Slack Web API: Slack
answering 503 to `auth.test` for 8 s right after a start (a command, a button click and a modal submission
coming then), and a revoked token."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx
from gpubot.bot.listeners.modal import CALLBACK as BOOK_MODAL
from gpubot.db import bookings as booking_repo
from gpubot.domain.model import BookingState

from gpubot.sandbox import process as sandbox
from gpubot.sandbox.requests import action_body
from gpubot.sandbox.slack_api import FakeSlackApi
from tests.e2e.server_kit import RunningBot, config, owned_booking_ids, serving, settle, sim, start_bot, wait_live

CONFIG = config(providers={"sim": sim(telemetry=False)})


def _replies(bot, key: str) -> list[str]:
    return [c.args.get("text", "") for c in bot.api.calls if c.method == "response_url" and c.args.get("_key") == key]


def test_a_slack_outage_at_start_keeps_the_command_waiting_then_runs_it(tmp_path) -> None:
    api = FakeSlackApi()
    api.down.add("auth.test")  # Slack's 5xx at a cold start, before Bolt ever authorised the bot
    with serving(tmp_path, CONFIG, api=api) as bot:
        started = time.monotonic()
        assert bot.command("book a100x1 1h", user="UWAIT").status_code == 200
        assert bot.api.wait_for(lambda _c: any("is waiting" in t for t in _replies(bot, "r1")), 15)
        assert not owned_booking_ids(bot, "UWAIT")
        time.sleep(max(0.0, 8 - (time.monotonic() - started)))  # the outage lasts 8 s
        api.down.discard("auth.test")
        deadline = time.monotonic() + 60
        while not owned_booking_ids(bot, "UWAIT"):
            assert time.monotonic() < deadline, "the command waiting for Slack was never run"
            time.sleep(0.1)
        settle(bot)
        assert not [t for t in _replies(bot, "r1") if "was not run" in t]
        assert httpx.get(f"{bot.url}/readyz", timeout=5).status_code == 200


def test_a_revoked_token_answers_every_command_and_turns_readyz_not_ready(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(sandbox, "wait_healthy", wait_live)  # /readyz is meant to say no here
    api = FakeSlackApi()
    api.refusing["auth.test"] = "token_revoked"
    with serving(tmp_path, CONFIG, api=api) as bot:
        deadline = time.monotonic() + 30
        while not (ready := httpx.get(f"{bot.url}/readyz", timeout=5)).json()["started"] or \
                "token_revoked" not in ready.text:
            assert time.monotonic() < deadline, ready.text
            time.sleep(0.1)
        assert ready.status_code == 503 and ready.json()["slack"] is False
        assert "token_revoked" in ready.json()["reasons"]["slack"]
        assert bot.command("book a100x1 1h", user="UREVOKED").status_code == 200
        assert bot.api.wait_for(lambda _c: any("refuses gpubot's bot token" in t for t in _replies(bot, "r1")), 15)
        settle(bot)
        assert not owned_booking_ids(bot, "UREVOKED")
        metrics = httpx.get(f"{bot.url}/metrics", timeout=5).text
        assert "gpubot_slack_auth_ok 0.0" in metrics




def _book_and_restart_with_slack_down(tmp_path, api: FakeSlackApi) -> tuple[int, RunningBot]:
    """A booking scheduled two hours on, made while Slack was up, then gpubot restarted into Slack's 5xx on
    `auth.test` (a scheduled booking holds no machine, so it is still there after the restart)."""
    bot = start_bot(tmp_path, CONFIG, api=api)
    try:
        at = (datetime.now(UTC) + timedelta(hours=2)).strftime("%H:%M")
        assert bot.command(f"book a100x1 1h --at {at}", user="UCLICK").status_code == 200
        deadline = time.monotonic() + 20
        while not owned_booking_ids(bot, "UCLICK"):
            assert time.monotonic() < deadline, "the scheduled booking was never made"
            time.sleep(0.05)
        [booking_id] = owned_booking_ids(bot, "UCLICK")
        assert bot.api.wait_for(lambda _c: _cancel_button(api, booking_id) is not None, 20)
        settle(bot)
    finally:
        bot.stop()  # its fake Slack stays up for the next start
    api.down.add("auth.test")
    return booking_id, start_bot(tmp_path, CONFIG, api=api, append_log=True)


def _cancel_button(api: FakeSlackApi, booking_id: int) -> tuple[str, str] | None:
    """(message ts, value) of the Cancel button on the booking's message, once it shows one."""
    for ts, message in list(api.messages.get("CGPU", {}).items()):
        if f"*#{booking_id}*" in message["text"]:
            for block in message.get("blocks", []):
                for e in block.get("elements", []) if block["type"] == "actions" else []:
                    if e["action_id"] == "booking_cancel":
                        return ts, e["value"]
    return None


def _state(bot: RunningBot, booking_id: int) -> BookingState:
    with bot.db.session() as session:
        return booking_repo.get_booking(booking_id, session=session).state


def test_a_click_during_a_slack_outage_at_start_waits_then_acts(tmp_path) -> None:
    api = FakeSlackApi()
    booking_id, bot = _book_and_restart_with_slack_down(tmp_path, api)
    try:
        ts, value = _cancel_button(api, booking_id)
        body = action_body("booking_cancel", value, user="UCLICK", channel="CGPU", message_ts=ts,
                           response_url=api.response_url("click"))
        started = time.monotonic()
        assert bot.post(body).status_code == 200
        assert api.wait_for(lambda _c: any("is waiting" in t for t in _replies(bot, "click")), 15)
        assert _state(bot, booking_id) == BookingState.SCHEDULED, "the click ran before Slack authorised the bot"
        time.sleep(max(0.0, 5 - (time.monotonic() - started)))  # the outage lasts 5 s
        api.down.discard("auth.test")
        deadline = time.monotonic() + 60
        while _state(bot, booking_id) != BookingState.CANCELLED:
            assert time.monotonic() < deadline, "the click waiting for Slack was never run"
            time.sleep(0.1)
        settle(bot)
        assert not [t for t in _replies(bot, "click") if "was not run" in t]
    finally:
        bot.stop()
        api.stop()


def test_a_modal_submitted_during_a_slack_outage_stays_open_and_says_submit_again(tmp_path) -> None:
    api = FakeSlackApi()
    api.down.add("auth.test")
    view = {"id": "VWAIT", "type": "modal", "callback_id": BOOK_MODAL, "hash": "h1", "blocks": [
        {"type": "input", "block_id": block} for block in ("gpu", "count", "duration", "project")],
        "state": {"values": {
            "gpu": {"gpu_pick": {"type": "static_select", "selected_option": {"value": "a100"}}},
            "count": {"count_pick": {"type": "static_select", "selected_option": {"value": "1"}}},
            "duration": {"duration_text": {"type": "plain_text_input", "value": "1h"}},
            "project": {"project_text": {"type": "plain_text_input", "value": None}}}}}
    with serving(tmp_path, CONFIG, api=api) as bot:
        refused = bot.submit_view(view, user="UMODAL")
        assert refused.status_code == 200
        assert refused.json()["response_action"] == "errors"
        assert "submit it again" in refused.json()["errors"]["gpu"]
        settle(bot)
        assert not owned_booking_ids(bot, "UMODAL")
        api.down.discard("auth.test")
        assert bot.submit_view(view, user="UMODAL").status_code == 200
        deadline = time.monotonic() + 30
        while not owned_booking_ids(bot, "UMODAL"):
            assert time.monotonic() < deadline, "the submission made once Slack was back booked nothing"
            time.sleep(0.1)

