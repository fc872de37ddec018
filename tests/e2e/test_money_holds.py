"""Money that cannot leak, through `gpubot serve` and signed HTTP (issue #17): scheduled bookings hold budget, a
double click and a replayed command extend once, a forged Replace launches nothing, `/gpu cost` counts live."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState

from gpubot.sandbox.requests import action_body, sign, slash_command_body
from tests.e2e.server_kit import SECRET, RunningBot, config, offer, serving, settle, sim

BLOCKING = config(budget={"monthly": 20, "over_budget": "block"},
                  providers={"sim": sim(offer(count=16))})

ROOMY = config(alerts=True, budget={"monthly": 100000, "over_budget": "block"}, booking={"max_duration": "3d"},
               providers={"sim": sim(offer(count=16), offer("h100", price=3600.0), telemetry=False)})


def _found(bot: RunningBot, method: str, *needles: str, timeout: float = 15) -> dict:
    hits: list = []

    def seen(calls) -> bool:
        hits[:] = [c.args for c in calls if c.method == method and all(n in json.dumps(c.args, ensure_ascii=False)
                                                                       for n in needles)]
        return bool(hits)

    assert bot.api.wait_for(seen, timeout), f"no {method} with {needles}"
    return hits[-1]


def _bookings(bot: RunningBot, owner: str | None = None):
    with bot.db.session() as session:
        return repo.list_bookings(session=session, owner=owner)


def _message(bot: RunningBot, booking_id: int) -> tuple[str, dict]:
    return next((ts, m) for ts, m in bot.api.messages["CGPU"].items() if f"*#{booking_id}*" in m["text"])


def _button(message: dict, action_id: str) -> str:
    """The value of a button as the message shows it now."""
    return next(e["value"] for block in message["blocks"] if block["type"] == "actions"
                for e in block["elements"] if e["action_id"] == action_id)


def _click(bot: RunningBot, action_id: str, value: str, user: str, ts: str, key: str) -> None:
    body = action_body(action_id, value, user=user, channel="CGPU", message_ts=ts,
                       response_url=bot.api.response_url(key))
    assert bot.post(body).status_code == 200


def _running(bot: RunningBot, user: str, shape: str = "a100x1 2h"):
    bot.command(f"book {shape}", user=user)
    _found(bot, "chat.postMessage", "is ready", user)
    return _bookings(bot, user)[-1]


@pytest.fixture(scope="module")
def roomy(tmp_path_factory) -> RunningBot:
    with serving(tmp_path_factory.mktemp("holds"), ROOMY) as running:
        yield running


def test_scheduled_bookings_hold_budget_so_the_second_of_five_is_refused(tmp_path):
    with serving(tmp_path, BLOCKING) as bot:
        start = datetime.now(UTC) + timedelta(hours=2)
        for i in range(5):
            at = (start + timedelta(minutes=10 * i)).strftime("%H:%M")
            bot.command(f"book a100x1 8h --at {at}", user="UALICE")  # $16 each against $20
            if i == 0:
                _found(bot, "chat.postMessage", "*#1*", "scheduled")
            else:
                refusal = _found(bot, "response_url", f"r{i + 1}", "refused")
                assert "team would reach $32.00 of $20.00" in refusal["text"] and "already booked" in refusal["text"]
        held = _bookings(bot)
        assert [(b.id, b.state) for b in held] == [(1, BookingState.SCHEDULED)]
        bot.command("quote a100x1 8h", user="UBOB")  # what is scheduled counts in the quote's budget effect too
        assert "team at 160 % of $20.00 (was 80 %)" in _found(bot, "response_url", "Budget if booked")["text"]
        assert not [c for c in bot.api.calls_to("chat.postMessage") if "is ready" in c.args.get("text", "")]


def test_a_double_click_on_extend_extends_once_per_rendered_message(roomy):
    booking = _running(roomy, "UDORA")
    for gap in (0.15, 2.0):
        ts, message = _message(roomy, booking.id)
        value = _button(message, "booking_extend")
        ends = _bookings(roomy, "UDORA")[-1].ends_at
        _click(roomy, "booking_extend", value, "UDORA", ts, f"x{gap}a")
        time.sleep(gap)
        _click(roomy, "booking_extend", value, "UDORA", ts, f"x{gap}b")
        _found(roomy, "response_url", f"x{gap}b")
        settle(roomy)
        assert _bookings(roomy, "UDORA")[-1].ends_at == ends + timedelta(hours=1)
        assert _button(_message(roomy, booking.id)[1], "booking_extend") != value, "the message shows the change"
    updated = _found(roomy, "chat.update", f"*#{booking.id}*", "Extended by 1h", "4h in all")
    assert f"#{booking.id}* 1× A100 40GB for 4h" in updated["text"]
    assert "≈ $8.00 for 4h at $2.00/GPU-h" in updated["text"], "its price line shows the new length and cost"
    replies = [c.args["text"] for c in roomy.api.calls_to("response_url") if c.args["_key"].startswith("x")]
    assert sum("already made" in text for text in replies) == 2 and sum("now ends" in text for text in replies) == 2
    roomy.command("status", user="UDORA")
    _found(roomy, "response_url", f"*#{booking.id}* 1× A100 40GB for 4h — active")


def test_a_replayed_signed_extend_command_extends_once(roomy):
    booking = _running(roomy, "UEVE")
    body = slash_command_body(f"extend {booking.id} 1h", user="UEVE", channel="CGPU", trigger_id="trig.replayed",
                              response_url=roomy.api.response_url("replayed"))
    headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)}
    for _ in range(3):  # the same signed request, re-sent within the signature's five minutes
        assert httpx.post(f"{roomy.url}/slack/events", content=body, headers=headers, timeout=10).status_code == 200
        time.sleep(0.3)
    settle(roomy)
    assert _bookings(roomy, "UEVE")[-1].ends_at == booking.ends_at + timedelta(hours=1)
    texts = [c.args["text"] for c in roomy.api.calls_to("response_url") if c.args["_key"] == "replayed"]
    assert len(texts) == 1 and "now ends" in texts[0]  # the inbox acks the copies and dispatches none of them
    assert "3h in all (+1h, ≈ $2.00 more)" in next(t for t in texts if "now ends" in t)


def test_a_forged_replace_on_a_healthy_booking_is_refused_and_launches_nothing(roomy):
    booking = _running(roomy, "UFRED", "a100x8 2h")
    before = len(_bookings(roomy))
    ts, _message_shown = _message(roomy, booking.id)
    _click(roomy, "booking_replace", str(booking.id), "UFRED", ts, "forged")
    refusal = _found(roomy, "response_url", "forged", "no open overheat alert")
    assert refusal["response_type"] == "ephemeral"
    settle(roomy)
    assert len(_bookings(roomy)) == before
    assert [b.state for b in _bookings(roomy, "UFRED")] == [BookingState.ACTIVE]


def test_cost_and_budget_count_a_running_booking_live(roomy):
    _running(roomy, "UGIA", "h100x1 1h")  # $1 per second
    time.sleep(2)
    roomy.command("cost month", user="UGIA")
    table = _found(roomy, "response_url", "Spend, month")["text"]
    row = next(line for line in table.splitlines() if line.startswith("UGIA"))
    assert float(row.split()[1].lstrip("$").replace(",", "")) >= 2.0, row
    roomy.command("budget", user="UGIA")
    team = next(line for line in _found(roomy, "response_url", "Budgets for")["text"].splitlines()
                if line.startswith("team:"))
    spent, forecast = team.split(" spent")[0].split("$")[1], team.split("forecast $")[1].split()[0]
    assert float(spent.replace(",", "")) >= 2.0 and float(forecast.replace(",", "")) >= 3600.0, team
