"""Times in the reader's Slack time zone, over signed HTTP: users.info says Asia/Shanghai, so the booking message,
the expiry reminder (delivered later by the outbox) and `/gpu status` show Shanghai time with the zone named, in
Chinese or English as the reader reads; a person Slack gives no zone reads the team's (America/New_York)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import Booking

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.e2e.server_kit import RunningBot, book, config, dm, offer, serving, sim, wait_call

SHANGHAI, NEW_YORK = ZoneInfo("Asia/Shanghai"), ZoneInfo("America/New_York")
CONFIG = config(team={"timezone": "America/New_York"},
                booking={"expiry_reminders": ["59m55s"]}, acquire={"poll_every": "1s"}, scheduler={"tick": "1s"},
                providers={"sim": sim(offer(count=16))})


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> RunningBot:
    """A fake Slack where UZHANG (zh-CN) and ULEE (en-US) are in Asia/Shanghai and UALICE has no zone."""
    api = FakeSlackApi(user_zones={"UZHANG": "Asia/Shanghai", "ULEE": "Asia/Shanghai"},
                       user_locales={"UZHANG": "zh-CN"})
    with serving(tmp_path_factory.mktemp("reader_zone"), CONFIG, api=api) as running:
        yield running


def _booking(bot: RunningBot, label: str) -> Booking:
    with bot.db.session() as session:
        return repo.get_booking(int(label.lstrip("#")), session=session)


def _tomorrow_nine(zone: ZoneInfo) -> datetime:
    return datetime.combine(datetime.now(zone).date() + timedelta(days=1), time(9), tzinfo=zone)


def test_a_scheduled_booking_starts_in_the_bookers_shanghai_time_in_chinese(bot):
    label = book(bot, "UZHANG", "a100x1 1h --at 明天 09:00")
    start = _tomorrow_nine(SHANGHAI)
    assert _booking(bot, label).start_at == start.astimezone(UTC)
    message = wait_call(bot, "chat.postMessage", f"*{label}*")["text"]
    assert f"北京时间 {start:%Y-%m-%d} 09:00 开始。" in message, message
    assert "UTC" not in message, message


def test_an_english_reader_in_shanghai_reads_cst_and_status_says_it_too(bot):
    label = book(bot, "ULEE", "a100x1 1h --at tomorrow 09:00")
    start = _tomorrow_nine(SHANGHAI)
    message = wait_call(bot, "chat.postMessage", f"*{label}*")["text"]
    assert f"Starts {start:%Y-%m-%d} 09:00 CST." in message, message
    before = len(bot.api.calls_to("response_url"))
    bot.command("status", user="ULEE")
    assert bot.api.wait_for(lambda _calls: len(bot.api.calls_to("response_url")) > before, 20)
    status = bot.api.calls_to("response_url")[before].args["text"]
    assert f", starts {start:%Y-%m-%d} 09:00 CST" in status, status


def test_a_person_slack_gives_no_zone_reads_the_teams(bot):
    label = book(bot, "UALICE", "a100x1 1h --at tomorrow 09:00")
    start = _tomorrow_nine(NEW_YORK)
    assert _booking(bot, label).start_at == start.astimezone(UTC)
    message = wait_call(bot, "chat.postMessage", f"*{label}*")["text"]
    assert f"Starts {start:%Y-%m-%d} 09:00 {start.tzname()}." in message, message


def test_the_expiry_reminder_names_the_end_in_shanghai_time(bot):
    label = book(bot, "UZHANG", "a100x1 1h")
    reminder = dm(bot, "UZHANG", f"⏰ {label}", timeout=60)
    ends = _booking(bot, label).ends_at.astimezone(SHANGHAI)
    assert f"（北京时间 {ends:%H:%M}）" in reminder, reminder
    label = book(bot, "ULEE", "a100x1 1h")
    reminder = dm(bot, "ULEE", f"⏰ {label}", timeout=60)
    assert f"(at {_booking(bot, label).ends_at.astimezone(SHANGHAI):%H:%M} CST)" in reminder, reminder
