"""Budgets over Slack's wire protocol: over-budget approval and denial, warnings, quotes and reports."""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.server_kit import RunningBot, book, config, offer, serving, sim


def _config(mode: str) -> str:
    """Budgets of $10 a month ($5 for UCAROL), passed as `mode` says (approve, warn, block)."""
    return config(team={"digest_channel": "CDIGEST"},
                  budget={"monthly": 10, "over_budget": mode, "users": {"UCAROL": 5}},
                  providers={"sim": sim(offer(count=16, price=2.42))})


def _wait(bot: RunningBot, method: str, *needles: str, channel: str | None = None) -> dict:
    found: list = []

    def seen(calls) -> bool:
        found[:] = [c for c in calls if c.method == method and (channel is None or c.args.get("channel") == channel)
                    and all(n in json.dumps(c.args, ensure_ascii=False) for n in needles)]
        return bool(found)

    texts = [c.args.get("text", "") for c in bot.api.calls_to(method)]
    assert bot.api.wait_for(seen, 10), f"no {method} with {needles}; got {texts}"
    return found[-1].args


def _message_ts(bot: RunningBot, booking_id: int) -> str:
    return next(ts for ts, m in bot.api.messages["CGPU"].items() if f"#{booking_id}*" in m["text"])


@pytest.fixture(scope="module")
def approving(tmp_path_factory) -> RunningBot:
    """gpubot with a $10 budget that holds over-budget bookings for an admin."""
    with serving(tmp_path_factory.mktemp("money"), _config("approve")) as running:
        yield running


def test_a_quote_shows_the_budget_effect(approving):
    approving.command("quote a100x4 6h", user="UALICE")
    reply = _wait(approving, "response_url", "Budget if booked")
    assert "≈ $58.08" in reply["text"]
    # $58.08 is 581 % of $10 on top of what the module's other tests may hold already
    after, before = map(int, re.search(r"team at (\d+) % of \$10\.00 \(was (\d+) %\)", reply["text"]).groups())
    assert after - before in (580, 581, 582), reply["text"]
    assert "over budget (over_budget = approve)" in reply["text"]


def test_an_admin_approves_and_the_requester_is_told_who(approving):
    label = book(approving, "UALICE", "a100x4 6h")
    posted = _wait(approving, "chat.postMessage", label, "waiting for an admin", channel="CGPU")
    assert "$58.08" in posted["text"]
    asked = _wait(approving, "chat.postMessage",
                  f"<@UALICE>'s {label} (4× a100 for 6h) is over budget: team would reach", channel="UADMIN")
    assert "booking_approve" in json.dumps(asked["blocks"]) and "booking_deny" in json.dumps(asked["blocks"])
    booking_id = int(label[1:])
    ts = _message_ts(approving, booking_id)
    approving.click("booking_approve", booking_id, user="UALICE", message_ts=ts)
    assert "Only team admins" in _wait(approving, "response_url", "Only team admins")["text"]
    approving.click("booking_approve", booking_id, user="UADMIN", message_ts=ts)
    told = _wait(approving, "chat.postMessage", f"{label} was approved by <@UADMIN>", channel="UALICE")
    assert told["channel"] == "UALICE"
    _wait(approving, "chat.update", label, "active on sim")


def test_an_admin_denies_and_the_booking_is_cancelled(approving):
    label = book(approving, "UBOB", "a100x4 6h")  # over the $10 budget whatever ran before
    booking_id = int(label[1:])
    _wait(approving, "chat.postMessage", label, "waiting for an admin", channel="CGPU")
    approving.click("booking_deny", booking_id, user="UADMIN", message_ts=_message_ts(approving, booking_id))
    _wait(approving, "chat.postMessage", f"{label} was denied by <@UADMIN>", channel="UBOB")
    updated = _wait(approving, "chat.update", label, "Denied by <@UADMIN>")
    assert "cancelled" in updated["text"]
    approving.click("booking_approve", booking_id, user="UADMIN", message_ts=_message_ts(approving, booking_id) + "x")
    assert "already decided" in _wait(approving, "response_url", "already decided")["text"]


def test_cost_and_budget_reports_answer(approving):
    approving.command("cost month by user", user="UALICE")
    table = _wait(approving, "response_url", "Spend, month, by user")["text"]
    assert "idle waste" in table and "total" in table
    approving.command("budget", user="UALICE")
    budgets = _wait(approving, "response_url", "Budgets for")["text"]
    assert "team:" in budgets and "of $10.00" in budgets and "forecast" in budgets
    assert "user:UCAROL" not in budgets, "another person's budget is for them and the admins"
    approving.command("budget", user="UADMIN")
    assert "user:UCAROL" in _wait(approving, "response_url", "Budgets for", "user:UCAROL")["text"]


def test_an_admin_sets_a_persons_budget_by_mentioning_them(approving):
    approving.command("admin budget set <@U0DAN|dan> 20", user="UADMIN")
    assert "Budget for user:U0DAN set to $20.00." in _wait(approving, "response_url", "Budget for user:U0DAN")["text"]
    approving.command("budget", user="U0DAN")
    assert "user:U0DAN" in _wait(approving, "response_url", "Budgets for", "user:U0DAN", "of $20.00")["text"]


def test_warn_books_with_a_warning_and_block_refuses(tmp_path):
    (tmp_path / "warn").mkdir()
    with serving(tmp_path / "warn", _config("warn")) as warn:
        warn.command("book a100x4 6h", user="UALICE")
        posted = _wait(warn, "chat.postMessage", "#1", channel="CGPU")
        assert "⚠️ Over budget: team would reach $58.08 of $10.00 (581 %). Booked anyway." in posted["text"]
        _wait(warn, "chat.update", "#1", "active on sim")
    (tmp_path / "block").mkdir()
    with serving(tmp_path / "block", _config("block")) as block:
        block.command("book a100x4 6h", user="UALICE")
        refusal = _wait(block, "response_url", "refused")
        assert "team would reach $58.08 of $10.00" in refusal["text"] and refusal["response_type"] == "ephemeral"
        block.command("book a100x4 6h", user="UADMIN")  # an admin may always book, and is warned
        _wait(block, "chat.postMessage", "#1", "Over budget: team would reach $58.08", channel="CGPU")
