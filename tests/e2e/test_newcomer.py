"""A newcomer's first day through Slack's wire protocol (signed requests to `gpubot serve`, a local Web API):
scheduled bookings say when they start and their message follows a release, a shape nothing sells is refused at
once, the grammar reads everyday spellings, replies say what happened in one sentence, and serve starts quietly."""

from __future__ import annotations

import json
import re
import time

from tests.e2e.server_kit import settle
from tests.e2e.test_slack_surface import _texts, _wait_text


def _message_of(bot, booking_id: int) -> tuple[str, dict]:
    return next((ts, m) for ts, m in bot.api.messages["CGPU"].items() if f"*#{booking_id}*" in m["text"])


def _booked_id(bot, needle: str) -> int:
    posted = _wait_text(bot, "chat.postMessage", needle)
    return int(re.search(r"\*#(\d+)\*", posted["text"]).group(1))


def test_a_scheduled_booking_shows_its_start_and_its_message_follows_a_release(bot):
    bot.command("book 2 a100 for 3 hours --at tomorrow 09:00", user="USCHED")
    booking_id = _booked_id(bot, "scheduled")
    start = re.search(r"Starts (\d{4}-\d\d-\d\d 09:00) UTC", _message_of(bot, booking_id)[1]["text"]).group(1)
    bot.command("status", user="USCHED")
    status = _wait_text(bot, "response_url", f"starts {start} UTC")["text"]
    assert f"#{booking_id}" in status and "for 3h — scheduled" in status
    bot.command("queue", user="USCHED")
    queue = _wait_text(bot, "response_url", "*Queue*")["text"]
    line = next(row for row in queue.split("\n") if f"#{booking_id}" in row)
    assert f"starts {start} UTC (in " in line and "waiting" not in line

    bot.command(f"release {booking_id}", user="USCHED")
    reply = _wait_text(bot, "response_url", f"#{booking_id} is cancelled")["text"]
    assert reply == f"#{booking_id} is cancelled; it had not started, so nothing was billed."
    updated = _wait_text(bot, "chat.update", f"*#{booking_id}* 2× A100 40GB for 3h — cancelled")
    assert "Cancelled before it started; nothing was billed." in updated["text"] and "Starts" not in updated["text"]
    _ts, message = _message_of(bot, booking_id)
    assert "— cancelled" in message["text"] and "actions" not in json.dumps(message["blocks"])  # no Cancel button


def test_releasing_a_running_booking_says_how_long_it_ran_and_what_it_cost(bot):
    bot.command("book a100 x1 for 90 min", user="URUN")
    booking_id = _booked_id(bot, "1× A100 40GB for 1h30m")
    _wait_text(bot, "chat.update", f"*#{booking_id}* 1× A100 40GB for 1h30m — active")
    bot.command(f"release #{booking_id}", user="URUN")
    reply = _wait_text(bot, "response_url", f"#{booking_id} is released")["text"]
    assert re.fullmatch(rf"#{booking_id} is released after \d+s; billing has stopped and it cost \$\d+\.\d\d\.",
                        reply), reply
    _wait_text(bot, "chat.postMessage", f"#{booking_id} released (released by its owner)")  # the outbox's DM


def test_a_shape_no_cloud_sells_is_refused_at_once_naming_the_largest(bot):
    settle(bot)  # what earlier tests owe is delivered first
    before = len(bot.api.calls_to("chat.postMessage"))
    started = time.monotonic()
    bot.command("book h100x16 2h", user="UBIG")
    reply = _wait_text(bot, "response_url", "No configured cloud")["text"]
    assert reply == ("⚠️ No configured cloud sells more than 8× H100 80GB in one machine; book `h100x8`, or split the "
                     "work over several bookings.")
    assert time.monotonic() - started < 10
    assert len(bot.api.calls_to("chat.postMessage")) == before  # no booking message: nothing queued


def test_everyday_spellings_and_chinese_units_book_and_doubled_values_are_refused(bot):
    bot.command("book 2 h100 6小时", user="UZH")
    _wait_text(bot, "chat.postMessage", "2× H100 80GB for 6h")
    bot.command("book a100x2 6h6h", user="UZH")
    refusal = _wait_text(bot, "response_url", "6h6h")["text"]
    assert "gives the hours twice" in refusal and "`/gpu book a100x2 6h`" in refusal
    bot.command("book a100x2 2h --project 'x```<!channel>```'", user="UZH")
    rule = _wait_text(bot, "response_url", "is not a project name")["text"]
    assert "1 to 40 lowercase letters, digits" in rule
    assert not any("<!channel>" in text for text in _texts(bot, "chat.postMessage"))


def test_serve_starts_without_a_warning_about_an_unused_token(bot):
    log = bot.log_path.read_text()
    assert "will be unused" not in log and "WARNING" not in log.split("Uvicorn running")[0], log[-2000:]


def test_user_text_never_posts_a_live_mention(bot):
    bot.command("book a100x1 1h --project 'x```<!channel>```'", user="UMENTION")
    refused = _wait_text(bot, "response_url", "is not a project name")["text"]
    assert "<!channel>" not in refused
    bot.command("book a100x1 1h --note 'see <!channel> and <@UEVE>'", user="UMENTION")
    _wait_text(bot, "chat.postMessage", "is ready")
    settle(bot)
    shown = json.dumps([call.args for call in bot.api.calls], ensure_ascii=False)
    assert "<!channel>" not in shown and "<@UEVE>" not in shown
