"""The reader's language through signed HTTP: a person whose Slack speaks zh-CN books in Chinese (reply, booking
message, buttons, yuan as ¥), `/gpu lang en` switches them to English and is kept in the ledger, `/gpu lang zh`
switches an English reader to Chinese, and a bad value is refused with a clear message."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.e2e.server_kit import RunningBot, book, config, offer, serving, sim

CONFIG = config(team={"currency": "CNY"}, budget={"monthly": 50000},
                providers={"sim": sim(offer(count=16, price=12.50), currency="CNY")})


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


def _answer(bot: RunningBot, text: str, user: str) -> str:
    """Send `/gpu <text>` as `user` and return the ephemeral reply to it (the next response_url call)."""
    before = len(bot.api.calls_to("response_url"))
    bot.command(text, user=user)
    assert bot.api.wait_for(lambda _calls: len(bot.api.calls_to("response_url")) > before, 10), f"no reply to {text}"
    reply = bot.api.calls_to("response_url")[before].args
    assert reply["response_type"] == "ephemeral"
    return reply["text"]


def _stored_language(bot: RunningBot, user: str) -> str | None:
    """The language the ledger keeps for `user` (None: no row, or no choice)."""
    with bot.db.session() as session:
        return session.execute(text("SELECT language FROM people WHERE user_id = :user"), {"user": user}).scalar()


def _button_labels(message: dict) -> list[str]:
    blocks = message["blocks"] if isinstance(message["blocks"], list) else json.loads(message["blocks"])
    return [e["text"]["text"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


def test_a_zh_cn_reader_books_in_chinese_with_yuan_as_the_plain_yen_sign(bot):
    label = book(bot, "UZHANG", "a100x4 6小时")
    posted = _wait(bot, "chat.postMessage", f"*{label}*")
    text = posted["text"]
    # 4 cards × 6 h × ¥12.50 = ¥300.00, in Chinese words and with yuan written ¥ (not CN¥)
    assert "≈ ¥300.00，6 小时，每卡每小时 ¥12.50，sim sim-1" in text, text
    assert "团队预订后达到 ¥50,000.00 的 1%（此前 0%）" in text, text
    assert "CN¥" not in text and "for 6h" not in text
    # The message is drawn as the booking is when it is posted: still looking, or already placed.
    looking = "正在寻找可用的卡…" in text
    assert _button_labels(posted) == (["取消"] if looking else ["续期 1 小时", "释放"]), text
    status = _answer(bot, "status", "UZHANG")
    assert f"*{label}* 4× A100 40GB，6 小时 — " in status, status


def test_an_english_reader_sees_cn_yuan_in_english(bot):
    reply = _answer(bot, "quote a100x2 2h", "UBOB")
    assert "*2× A100 40GB for 2h*" in reply and "CN¥12.50/GPU-h, ≈ CN¥50.00" in reply, reply


def test_lang_en_switches_a_zh_reader_to_english_and_auto_back(bot):
    assert _answer(bot, "help", "UZHANG").startswith("*用 `/gpu` 预订云 GPU*")
    assert _answer(bot, "lang en", "UZHANG") == (
        "Done. gpubot speaks English to you (you chose it with `/gpu lang`). `/gpu lang zh` switches to 简体中文; "
        "`/gpu lang auto` follows your Slack language.")
    assert _answer(bot, "help", "UZHANG").startswith("*Book cloud GPUs with `/gpu`*")
    assert _stored_language(bot, "UZHANG") == "en"

    back = _answer(bot, "lang auto", "UZHANG")
    assert back.startswith("好的：gpubot 重新跟随你的 Slack 语言。gpubot 对你使用简体中文（你的 Slack 语言）。"), back
    assert _stored_language(bot, "UZHANG") is None


def test_lang_zh_switches_an_english_reader_and_help_and_the_modal_follow(bot):
    assert _answer(bot, "lang 中文", "UCAROL").startswith("好的。gpubot 对你使用简体中文（你用 `/gpu lang` 选择的）。")
    assert "• `/gpu book a100x4 6h` – 预订 4 张 A100 显卡，6 小时" in _answer(bot, "help", "UCAROL")
    assert _answer(bot, "lang", "UCAROL").startswith("gpubot 对你使用简体中文（你用 `/gpu lang` 选择的）")
    bot.command("book", user="UCAROL", trigger_id="trigger-carol")
    modal = _wait(bot, "views.update", "每卡每小时 ¥12.50，sim（当前有卡）")["view"]
    modal = json.loads(modal) if isinstance(modal, str) else modal
    assert (modal["title"]["text"], modal["submit"]["text"]) == ("预订 GPU", "立即预订")


def test_a_bad_language_is_refused_in_the_readers_language_and_changes_nothing(bot):
    assert _answer(bot, "lang fr", "UZHANG") == (
        "⚠️ `lang` 只接受 `zh`（简体中文）、`en`（英文）或 `auto`（你的 Slack 语言），不接受 `fr`。"
        "请这样写：`/gpu lang zh`。")
    assert _answer(bot, "lang fr", "UBOB") == (
        "⚠️ `lang` takes `zh` (简体中文), `en` (English) or `auto` (your Slack language), not `fr`. "
        "Write it like `/gpu lang zh`.")
    assert _stored_language(bot, "UBOB") is None


def test_notices_reach_each_reader_in_their_language(bot):
    """The outbox's notices are worded per reader: a zh-CN owner's ready DM and booking message in Chinese, an
    English owner's in English, from the same delivery worker."""
    bot.command("book a100x1 1h", user="UZHANG")
    ready = _wait(bot, "chat.postMessage", "已就绪：1× a100")
    assert ready["channel"] == "UZHANG" and "登录指令：`ssh " in ready["text"], ready["text"]
    assert "is ready" not in ready["text"]
    bot.command("book a100x1 1h", user="UBOB")
    english = _wait(bot, "chat.postMessage", "is ready: 1× a100")
    assert english["channel"] == "UBOB" and "Connect with `ssh " in english["text"], english["text"]


def _updates_in(bot: RunningBot, channel: str) -> list[str]:
    return [c.args.get("text", "") for c in bot.api.calls_to("chat.update") if c.args.get("channel") == channel]


def test_a_reader_who_chose_chinese_follows_the_booking_messages_progress_in_chinese(bot):
    """The engine owes progress as facts; the delivery worker words each step for the booking's owner, so a
    person who chose `/gpu lang zh` sees the launch and the ready line in Chinese, in place of the English ones."""
    assert _answer(bot, "lang zh", "UDAN").startswith("好的。")
    bot.command("book a100x2 1h", user="UDAN", channel="CDAN")
    assert bot.api.wait_for(lambda _calls: any("sim sim-1：" in t and "就绪" in t for t in _updates_in(bot, "CDAN")),
                            20), f"no Chinese ready line: {_updates_in(bot, 'CDAN')}"
    shown = "\n".join(_updates_in(bot, "CDAN"))
    assert "ready" not in shown and "launching" not in shown and "Looking for capacity" not in shown, shown
    assert "≈ ¥25.00，1 小时，每卡每小时 ¥12.50，sim sim-1" in shown, shown
