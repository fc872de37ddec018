"""Which time zone a person reads times in, on a real ledger and the fake Slack Web API: their Slack `tz`
(users.info, the same profile and the same hourly ask as their Slack locale), else the team's time zone; the
translator a renderer gets (and the outbox's reader) carries it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from gpubot.bot.context import BotContext
from gpubot.bot.times import moment_for
from gpubot.db.people import LedgerLanguages
from slack_sdk import WebClient

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.engine_kit import make_engine, simulated_policy

MOMENT = datetime(2026, 7, 1, 1, 30, tzinfo=UTC)


@pytest.fixture
def api() -> Iterator[FakeSlackApi]:
    """A fake Slack where UZH reads zh-CN in Asia/Shanghai, UNY en-US in New York, UBAD a zone no one has."""
    fake = FakeSlackApi(user_zones={"UZH": "Asia/Shanghai", "UNY": "America/New_York", "UBAD": "Mars/Olympus"},
                        user_locales={"UZH": "zh-CN"})
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def ctx(database_url, clock, api) -> BotContext:
    """The bot's context on a real engine whose team is in Europe/Berlin."""
    engine = make_engine(database_url, simulated_policy(team={"timezone": "Europe/Berlin"}), clock)
    client = WebClient(token="xoxb-test", base_url=f"{api.base}/api/")
    return BotContext(engine=engine, client=client, languages=LedgerLanguages(engine.db))


def test_the_slack_zone_comes_with_the_locale_in_one_ask(ctx, api):
    assert moment_for(ctx.tr_for("UZH"), MOMENT) == "北京时间 2026-07-01 09:30"
    assert moment_for(ctx.tr_for("UNY"), MOMENT) == "2026-06-30 21:30 EDT"
    assert ctx.zone("UZH") == ZoneInfo("Asia/Shanghai")
    assert [c.args["user"] for c in api.calls_to("users.info")] == ["UZH", "UNY"]  # cached: asked once each


def test_no_zone_or_an_unknown_one_reads_the_teams_and_a_channel_reads_the_teams(ctx):
    assert moment_for(ctx.tr_for("UNONE"), MOMENT) == "2026-07-01 03:30 CEST"
    assert moment_for(ctx.tr_for("UBAD"), MOMENT) == "2026-07-01 03:30 CEST"
    assert moment_for(ctx.reads(""), MOMENT) == "2026-07-01 03:30 CEST"


def test_a_chosen_language_keeps_the_slack_zone(ctx, clock):
    ctx.languages.choose("UZH", "en", clock())
    assert moment_for(ctx.reads("UZH"), MOMENT, date=False) == "09:30 CST"


def test_without_asking_slack_only_a_cached_zone_counts(ctx, api):
    assert ctx.zone("UNY", ask_slack=False) == ZoneInfo("Europe/Berlin") and api.calls_to("users.info") == []
    ctx.zone("UNY")
    assert ctx.zone("UNY", ask_slack=False) == ZoneInfo("America/New_York")
