"""Everyday spellings over signed HTTP, as a Chinese-speaking team (Asia/Shanghai, zh-CN) and an English-speaking
one would type them: each is booked as meant (shape, duration, start in the booker's zone), periods are read,
bad input is refused in the reader's language with the user's own numbers and changes nothing, a price cap that
matches nothing names the cheapest price; a watch fires for the watched duration, Book now books that duration,
and the 30-minute booking it makes gets no expiry reminder the moment it is ready."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import Booking

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.e2e.server_kit import RunningBot, config, dm, offer, serving, sim

SHANGHAI = ZoneInfo("Asia/Shanghai")
CONFIG = config(team={"timezone": "UTC"}, acquire={"poll_every": "1s"},
                scheduler={"tick": "1s"}, providers={"sim": sim(
                    offer(count=16), offer("a100-80g", count=4, price=3.0), offer("h100", "sim-2", 8, 4.0))})


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> RunningBot:
    """gpubot serve with a fake Slack where UZHANG reads zh-CN in Asia/Shanghai, everyone else en-US in UTC."""
    api = FakeSlackApi(user_zones={"UZHANG": "Asia/Shanghai"}, user_locales={"UZHANG": "zh-CN"})
    with serving(tmp_path_factory.mktemp("spellings"), CONFIG, api=api) as running:
        yield running


def _answer(bot: RunningBot, text: str, user: str) -> str:
    """Send `/gpu <text>` as `user` and return the ephemeral reply to it (the next response_url call)."""
    before = len(bot.api.calls_to("response_url"))
    bot.command(text, user=user)
    assert bot.api.wait_for(lambda _calls: len(bot.api.calls_to("response_url")) > before, 20), f"no reply: {text}"
    return bot.api.calls_to("response_url")[before].args["text"]


def _bookings(bot: RunningBot) -> list[Booking]:
    with bot.db.session() as session:
        return sorted(repo.list_bookings(session=session), key=lambda b: b.id)


def _booked(bot: RunningBot, text: str, user: str) -> Booking:
    """Book with `text` and return the booking it made (waiting for its message)."""
    known = len(_bookings(bot))
    bot.command(text, user=user)
    assert bot.api.wait_for(lambda _calls: len(_bookings(bot)) > known, 20), f"nothing booked by {text}"
    return _bookings(bot)[known]


def _next(weekday: int, clock: time, zone: ZoneInfo, *, after_today: bool = False) -> datetime:
    now = datetime.now(zone)
    days = (weekday - now.weekday()) % 7 or (7 if after_today else 0)
    moment = datetime.combine(now.date() + timedelta(days=days), clock, tzinfo=zone)
    return (moment if moment > now else moment + timedelta(days=7)).astimezone(UTC)


def test_chinese_counts_and_durations_are_booked_as_meant(bot):
    assert (b := _booked(bot, "book 4卡 a100 一个半小时", "UZHANG")).gpu == "a100" and b.count == 4
    assert b.duration == timedelta(minutes=90)
    b = _booked(bot, "book a100 80g x2 6h30", "UALICE")
    assert (b.gpu, b.count, b.duration) == ("a100-80g", 2, timedelta(hours=6, minutes=30))
    b = _booked(bot, "book 两张 a100 半小时", "UZHANG")
    assert (b.count, b.duration) == (2, timedelta(minutes=30))
    b = _booked(bot, "book a100 x1 half an hour", "UALICE")
    assert b.duration == timedelta(minutes=30)


def test_start_times_are_read_in_the_bookers_zone(bot):
    tomorrow_nine = datetime.combine(datetime.now(SHANGHAI).date() + timedelta(days=1), time(9), tzinfo=SHANGHAI)
    b = _booked(bot, "book a100x2 半小时 --at 明天 09:00", "UZHANG")
    assert b.start_at == tomorrow_nine.astimezone(UTC)
    b = _booked(bot, "book a100x2 1小时 --at 下周一 9点", "UZHANG")
    monday = datetime.now(SHANGHAI).date() + timedelta(days=7 - datetime.now(SHANGHAI).weekday())
    assert b.start_at == datetime.combine(monday, time(9), tzinfo=SHANGHAI).astimezone(UTC)
    assert _booked(bot, "book h100 1h --at mon 09:00", "UALICE").start_at == _next(0, time(9), UTC)
    assert _booked(bot, "book h100 1h --at next monday 9am", "UALICE").start_at == _next(0, time(9), UTC,
                                                                                           after_today=True)
    assert _booked(bot, 'book h100 1h --at "dec 1 9am"', "UALICE").start_at.astimezone(UTC).strftime(
        "%m-%d %H:%M") == "12-01 09:00"  # read by dateparser, the bot's fuller reader


def test_periods_are_read_in_both_languages(bot):
    assert "Spend, yesterday, by user" in _answer(bot, "cost yesterday", "UALICE")
    assert "*上周支出（按用户）*" in _answer(bot, "cost 上周", "UZHANG")
    assert "*本月支出（按项目）*" in _answer(bot, "cost 本月 by project", "UZHANG")


def test_bad_input_is_refused_in_the_readers_language_and_changes_nothing(bot):
    before = len(_bookings(bot))
    said = _answer(bot, "quote a100 80g x2 3", "UZHANG")
    assert said == ("⚠️ `3` 没有单位：要 3 小时请写 `3h`，要 3 张卡请写 `a100-80gx3`。"
                    "请这样写：`/gpu quote a100-80gx2 3h`。")
    said = _answer(bot, "extend 1 90", "UZHANG")
    assert said == "⚠️ `90` 不是时长（请加上单位：`90m`）。请这样写：`/gpu extend 1 90m`。"
    said = _answer(bot, "book a100x4 2h --at 明天", "UZHANG")
    assert said == "⚠️ `明天` 还需要写明几点，如 `明天 09:00`。请这样写：`/gpu book a100x4 6h --at tomorrow 09:00`。"
    said = _answer(bot, "book a100x4 2h --max-price 1", "UALICE")
    assert said == ("⚠️ No configured cloud offers 4× A100 40GB at $1.00 per GPU-hour or less; the cheapest is $2.00 "
                    "on sim sim-1. Book with `--max-price 2` or more, or without `--max-price`.")
    assert "最便宜的是 sim sim-1 上的 US$2.00" in _answer(bot, "book a100x4 2h --max-price 1", "UZHANG")
    assert len(_bookings(bot)) == before


def test_a_watch_fires_for_its_duration_and_book_now_books_it_with_no_reminder_at_ready(bot):
    holder = _booked(bot, "book h100x8 1h", "UBOB")
    dm(bot, "UBOB", f"#{holder.id} is ready")
    said = _answer(bot, "watch h100x8 30m --within 1d", "UCAROL")
    assert said.startswith("👀 Watch #1: you get one DM when 8× H100 80GB can start for 30m, with a Book now button "
                           "that books it for 30m. Watching for 1d;"), said
    assert "#1 8× H100 80GB for 30m — watching 23h59m" in _answer(bot, "watches", "UCAROL")

    _answer(bot, f"release {holder.id}", "UBOB")
    fired = dm(bot, "UCAROL", "Watch #1")
    assert "Book now takes exactly this offer for 30m" in fired
    message = next(c for c in bot.api.calls_to("chat.postMessage") if c.args.get("text") == fired)
    known = len(_bookings(bot))
    bot.click("watch_book", 1, user="UCAROL", message_ts=message.result["ts"], channel="UCAROL")
    assert bot.api.wait_for(lambda _calls: len(_bookings(bot)) > known, 20), "Book now booked nothing"
    booked = _bookings(bot)[-1]
    assert (booked.owner, booked.gpu, booked.count, booked.duration) == ("UCAROL", "h100", 8, timedelta(minutes=30))
    dm(bot, "UCAROL", f"#{booked.id} is ready")
    ready_at = datetime.now(UTC)
    while datetime.now(UTC) - ready_at < timedelta(seconds=4):  # four scheduler ticks past ready
        assert not any("ends in" in c.args.get("text", "") for c in bot.api.calls_to("chat.postMessage")
                       if c.args.get("channel") == "UCAROL"), "a 30-minute booking was warned at ready"
        bot.api.wait_for(lambda _calls: False, 0.5)
