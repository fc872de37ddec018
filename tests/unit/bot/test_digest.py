"""The digest's renderings: Slack mrkdwn (one paragraph per part) and plain text for a terminal, in English and
Chinese; names from the ledger never post a live mention, and a digest back from the outbox reads the same."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpubot.bot.digest import digest_mrkdwn, digest_plain
from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.notices import render
from gpubot.domain.notices import (
    AlertRow,
    AttemptsRow,
    BookingRow,
    DigestReady,
    GroupRow,
    WasteRow,
    from_record,
    to_record,
)

DIGEST = DigestReady(
    channel="CDIGEST", period="2026-11-02", spent=Decimal("20.40"), gpu_hours=Decimal(14), waste=Decimal("0.50"),
    idle_gpu_hours=Decimal(1), month="2026-11", month_spent=Decimal("20.40"), month_limit=Decimal(5000),
    month_forecast=Decimal(306), daily=(Decimal(0), Decimal("20.40")),
    by_user=(GroupRow("UALICE", Decimal(12), Decimal(8), Decimal(1), Decimal("0.50")),
             GroupRow("UBOB", Decimal("8.40"), Decimal(6), Decimal(0), Decimal(0))),
    top_waste=(WasteRow(1, "UALICE", Decimal(1), Decimal("0.50")),),
    active=(BookingRow(3, 4, "a100", "UBOB", "a", "active", datetime(2026, 11, 3, 9, 0, tzinfo=UTC)),),
    waiting=(BookingRow(4, 2, "h100", "UCAROL", "", "queued", waited=timedelta(minutes=2, seconds=10)),),
    failed=(BookingRow(5, 1, "a100", "UALICE", "", "failed", failure="no capacity"),),
    attempts=(AttemptsRow("b quota", 2),))
QUIET = DigestReady(channel="CDIGEST", period="2026-11-02", month="2026-11")


def test_plain_text_has_no_slack_markup():
    text = digest_plain(DIGEST)
    assert text.startswith("Digest for 2026-11-02: $20.40 spent, 14.0 GPU-hours, $0.50 idle waste.")
    assert "By user\n  user " in text and "  - #1 @UALICE: 1.0 idle GPU-h, $0.50" in text
    assert "  - #3 4× a100 on a for @UBOB, until 2026-11-03 09:00 UTC" in text
    assert "  - #4 2× h100 for @UCAROL — queued, waiting 2m10s" in text
    assert "  - #5 1× a100 for @UALICE: no capacity\n  - b quota: 2 attempts" in text
    assert not any(mark in text for mark in ("*", "```", "<@", "•"))


def test_mrkdwn_keeps_bold_titles_fenced_tables_and_mentions():
    paragraphs = digest_mrkdwn(DIGEST).split("\n\n")
    assert paragraphs[0] == "📊 *Digest for 2026-11-02*: $20.40 spent, 14.0 GPU-hours, $0.50 idle waste."
    assert paragraphs[1] == "*Month to date (2026-11)*: $20.40 of $5,000.00 (0 %); month-end forecast $306.00 (6 %)."
    assert paragraphs[2].startswith("*By user*\n```user") and paragraphs[2].endswith("```")
    assert "• #1 <@UALICE>: 1.0 idle GPU-h, $0.50" in paragraphs[3]


def test_a_quiet_day_is_one_line_in_both():
    assert digest_plain(QUIET) == "Digest for 2026-11-02: no activity."
    assert digest_mrkdwn(QUIET) == "📊 Digest for 2026-11-02: no activity."
    assert render(QUIET, translator_for("zh")).message["text"] == "📊 2026-11-02 每日费用日报：无活动。"


def test_a_chinese_reader_gets_the_digest_in_chinese():
    text = render(DIGEST, translator_for("zh")).message["text"]
    assert text.startswith("📊 *2026-11-02 每日费用日报*：支出 US$20.40，14.0 卡时，闲置浪费 US$0.50。")
    for said in ("*本月至今（2026 年 11 月）*：已支出 US$20.40，预算 US$5,000.00（0%）；预计月底 US$306.00（6%）。",
                 "*按用户*", "*闲置浪费最多*\n• #1 <@UALICE>：闲置 1.0 卡时，US$0.50",
                 "*运行中的预订*\n• #3 4× a100，a，<@UBOB>，至 2026-11-03 09:00 UTC",
                 "• #4 2× h100，<@UCAROL> — 排队中，已等待 2 分钟 10 秒", "*分配失败*", "b quota：2 次尝试"):
        assert said in text


def test_a_failed_booking_says_what_it_tried_in_the_readers_language():
    tried = (("lambda", "us-east-1", "no_capacity"), ("aws", "us-west-2", "vanished"), ("lab", "gpu", "weird"))
    failed = (BookingRow(5, 1, "a100", "UALICE", "", "failed", failure="lambda us-east-1: no capacity; …",
                         tried=tried),
              BookingRow(6, 1, "h100", "UBOB", "", "failed", failure="over budget at launch: team would reach …"))
    digest = dataclasses.replace(DIGEST, failed=failed)
    english = render(digest, ENGLISH).message["text"]
    assert ("• #5 1× a100 for <@UALICE>: lambda us-east-1: no capacity; aws us-west-2: dropped while booting; "
            "lab gpu: error") in english
    assert "• #6 1× h100 for <@UBOB>: over budget at launch: team would reach …" in english  # nothing tried
    chinese = render(digest, translator_for("zh")).message["text"]
    assert ("• #5 1× a100，<@UALICE>：lambda us-east-1：库存不足；aws us-west-2：启动中被云平台收回；lab gpu：出错"
            in chinese), chinese
    assert "over budget" not in chinese and "• #6 1× h100，<@UBOB>：失败" in chinese


def test_names_from_the_ledger_never_post_a_live_mention_or_break_a_fence():
    hostile = "x```<!channel>```<@UEVE>"
    digest = DigestReady(channel="C", period="2026-11-02", spent=Decimal(1),
                         by_project=(GroupRow(hostile, Decimal(1), Decimal(1), Decimal(0), Decimal(0)),),
                         failed=(BookingRow(5, 1, "a100", "UALICE", "", "failed", failure=hostile),),
                         alerts=(AlertRow("quota", hostile),))
    text = digest_mrkdwn(digest)
    assert "<!channel>" not in text and "<@UEVE>" not in text and "```<" not in text
    assert "xˋˋˋ&lt;!channel&gt;ˋˋˋ&lt;@UEVE&gt;" in text


def test_a_digest_back_from_the_outbox_reads_the_same():
    back = from_record(json.loads(json.dumps(to_record(DIGEST))))
    assert back == DIGEST and digest_mrkdwn(back) == digest_mrkdwn(DIGEST)
