"""Which language a person reads, on a real ledger (SQLite and PostgreSQL) and the fake Slack Web API: their
`/gpu lang` choice, else their Slack locale (users.info, asked once an hour), else team.language."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from gpubot.bot.context import BotContext
from gpubot.db.people import LedgerLanguages
from slack_sdk import WebClient

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.engine_kit import make_engine, simulated_policy


@pytest.fixture
def api() -> Iterator[FakeSlackApi]:
    """A fake Slack where UZH reads zh-CN, UJA ja-JP and everyone else en-US."""
    fake = FakeSlackApi(user_locales={"UZH": "zh-CN", "UJA": "ja-JP"})
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def ctx(database_url, clock, api) -> BotContext:
    """The bot's context on a real engine whose team speaks Chinese by default."""
    policy = simulated_policy(team={"language": "zh"})
    engine = make_engine(database_url, policy, clock)
    client = WebClient(token="xoxb-test", base_url=f"{api.base}/api/")
    return BotContext(engine=engine, client=client, languages=LedgerLanguages(engine.db))


def test_the_slack_locale_is_asked_once_and_decides_when_nothing_was_chosen(ctx, api):
    assert ctx.language("UZH") == ("zh", "slack")
    assert ctx.language("UEN") == ("en", "slack")
    assert ctx.language("UZH") == ("zh", "slack")
    asked = api.calls_to("users.info")
    assert [(c.args["user"], c.args["include_locale"]) for c in asked] == [("UZH", "1"), ("UEN", "1")]
    assert ctx.tr_for("UZH").gettext("Release") == "释放" and ctx.tr_for("UEN").gettext("Release") == "Release"


def test_a_choice_beats_the_slack_locale_and_auto_forgets_it(ctx, clock):
    ctx.languages.choose("UZH", "en", clock())
    assert ctx.language("UZH") == ("en", "chosen")
    ctx.languages.choose("UZH", "zh", clock())
    ctx.languages.choose("UEN", "zh", clock())
    assert ctx.language("UZH") == ("zh", "chosen") and ctx.language("UEN") == ("zh", "chosen")
    ctx.languages.choose("UEN", None, clock())
    assert ctx.language("UEN") == ("en", "slack")


def test_a_locale_gpubot_does_not_speak_falls_back_to_the_team_language(ctx):
    assert ctx.language("UJA") == ("zh", "team")


def test_slack_not_answering_gives_the_team_language_without_asking_at_every_request(ctx, api):
    api.rate_limits["users.info"] = [1, 30]  # one 429, then Slack answers again
    assert ctx.language("UEN") == ("zh", "team")
    assert ctx.language("UEN") == ("zh", "team")  # within PROFILE_RETRY: not asked again
    assert api.calls_to("users.info") == [] and api.rate_limits["users.info"][0] == 0
    assert ctx.language("UZH") == ("zh", "slack")
