"""The DM of a spot booking that launched on demand: why, where and at what price, in English and 简体中文."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.notices import render
from gpubot.domain.notices import SpotFellBack

FELL_BACK = SpotFellBack(to="UALICE", booking_id=12, gpu="a100", count=2, waited=timedelta(minutes=64),
                         after=timedelta(hours=1), provider="lambda", region="us-east-1", price=Decimal("1.29"),
                         currency="USD")


def test_the_owner_reads_why_where_and_the_on_demand_price():
    assert render(FELL_BACK, ENGLISH).message["text"] == (
        "#12 found no spot capacity for 2× a100 in 1h4m (the limit is 1h), so it launched on demand on lambda "
        "us-east-1 at $1.29 per GPU-hour ($2.58/h), billed at that price. On-demand machines are not taken back.")


def test_a_chinese_reader_finds_the_same_facts_and_no_english_words_of_ours():
    text = render(FELL_BACK, translator_for("zh")).message["text"]
    assert text.startswith("#12 在 1 小时 4 分钟内没有等到 2× a100 的抢占式实例（上限 1 小时），"
                           "已改为按量计费在 lambda us-east-1 启动")
    assert "US$1.29" in text and "US$2.58" in text
    words = set(re.findall(r"[A-Za-z]{3,}", text)) - {"lambda", "east"}
    assert words == set(), words
