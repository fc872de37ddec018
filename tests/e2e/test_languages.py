"""The reader's language through signed HTTP: a person whose Slack speaks zh-CN books in Chinese (reply, booking
message, buttons, yuan as ¥), `/gpu lang en` switches them to English and is kept in the ledger, `/gpu lang zh`
switches an English reader to Chinese, and a bad value is refused with a clear message."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.e2e.server_kit import RunningBot, serving

CONFIG = """
[team]
currency = "CNY"
admins = ["UADMIN"]

[budget]
monthly = 50000

[providers.sim]
kind = "simulated"
currency = "CNY"
stock = [{ gpu = "a100", region = "sim-1", count = 16, price = 12.50 }]
"""


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> RunningBot:
    """gpubot serve, with a fake Slack where UZHANG's locale is zh-CN and everyone else's en-US."""
    api = FakeSlackApi(user_locales={"UZHANG": "zh-CN"})
    with serving(tmp_path_factory.mktemp("languages"), CONFIG, api=api) as running:
        yield running


def _calls_with(bot: RunningBot, method: str, needle: str) -> list[dict]:
    return [c.args for c in bot.api.calls_to(method) if needle in json.dumps(c.args, ensure_ascii=False)]


def _wait(bot: RunningBot, method: str, needle: str, timeout: float = 10) -> dict:
    assert bot.api.wait_for(lambda _calls: bool(_calls_with(bot, method, needle)), timeout), \
        f"no {method} with {needle!r}: {[c.args.get('text') for c in bot.api.calls_to(method)]}"
    return _calls_with(bot, method, needle)[-1]


def _stored_language(bot: RunningBot, user: str) -> str | None:
    """The language the ledger keeps for `user` (None: no row, or no choice)."""
    with bot.db.session() as session:
        return session.execute(text("SELECT language FROM people WHERE user_id = :user"), {"user": user}).scalar()


def _button_labels(message: dict) -> list[str]:
    blocks = message["blocks"] if isinstance(message["blocks"], list) else json.loads(message["blocks"])
    return [e["text"]["text"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


def test_a_zh_cn_reader_books_in_chinese_with_yuan_as_the_plain_yen_sign(bot):
    bot.command("book a100x4 6小时", user="UZHANG")
    posted = _wait(bot, "chat.postMessage", "#1")
    text = posted["text"]
    # 4 cards × 6 h × ¥12.50 = ¥300.00, in Chinese words and with yuan written ¥ (not CN¥)
    assert "≈ ¥300.00，6h，每卡每小时 ¥12.50，sim sim-1" in text, text
    assert "正在寻找可用的卡…" in text and "team 预订后达到 ¥50,000.00 的 1 %（此前 0 %）" in text, text
    assert "CN¥" not in text and "for 6h" not in text
    assert _button_labels(posted) == ["取消"]
    bot.command("status", user="UZHANG")
    status = _wait(bot, "response_url", "*#1*")
    assert "4× A100 40GB，6h" in status["text"] and status["response_type"] == "ephemeral", status["text"]


def test_an_english_reader_sees_cn_yuan_in_english(bot):
    bot.command("quote a100x2 2h", user="UBOB")
    reply = _wait(bot, "response_url", "A100 40GB for 2h")
    assert "CN¥12.50/GPU-h, ≈ CN¥50.00" in reply["text"], reply["text"]


def test_lang_en_switches_a_zh_reader_to_english_and_lang_zh_back(bot):
    bot.command("lang en", user="UZHANG")
    reply = _wait(bot, "response_url", "gpubot speaks English to you")
    assert "you chose it with `/gpu lang`" in reply["text"], reply["text"]
    bot.command("status", user="UZHANG")
    assert "for 6h" in _wait(bot, "response_url", "4× A100 40GB for 6h")["text"]
    assert _stored_language(bot, "UZHANG") == "en"

    bot.command("lang auto", user="UZHANG")
    back = _wait(bot, "response_url", "gpubot 重新跟随你的 Slack 语言")
    expected = "好的：gpubot 重新跟随你的 Slack 语言。gpubot 对你使用简体中文（你的 Slack 语言）"
    assert back["text"].startswith(expected), back["text"]
    assert _stored_language(bot, "UZHANG") is None


def test_lang_zh_switches_an_english_reader_and_help_follows(bot):
    bot.command("lang 中文", user="UCAROL")
    assert "你用 `/gpu lang` 选择的" in _wait(bot, "response_url", "gpubot 对你使用简体中文")["text"]
    bot.command("help", user="UCAROL")
    assert "预订 4 张 A100 显卡，6 小时" in _wait(bot, "response_url", "用 `/gpu` 预订云 GPU")["text"]
    bot.command("lang", user="UCAROL")
    _wait(bot, "response_url", "gpubot 对你使用简体中文（你用 `/gpu lang` 选择的）")


def test_a_bad_language_is_refused_in_the_readers_language_and_changes_nothing(bot):
    bot.command("lang fr", user="UZHANG")
    reply = _wait(bot, "response_url", "`lang` 只接受")
    assert reply["text"] == ("⚠️ `lang` 只接受 `zh`（简体中文）、`en`（英文）或 `auto`（你的 Slack 语言），不接受 `fr`。"
                             "请这样写：`/gpu lang zh`。")
    bot.command("lang fr", user="UBOB")
    english = _wait(bot, "response_url", "`lang` takes")["text"]
    assert english == ("⚠️ `lang` takes `zh` (简体中文), `en` (English) or `auto` (your Slack language), not `fr`. "
                       "Write it like `/gpu lang zh`.")
    assert _stored_language(bot, "UBOB") is None
