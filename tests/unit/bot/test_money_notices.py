"""Renderers of the money notices: approvals and launch holds, budget crossings and the digest's chart, in the
reader's language."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest
from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.notices import render
from gpubot.domain.notices import ApprovalDecided, ApprovalNeeded, BudgetCrossed, DigestChart, LaunchHeld

CHINESE = translator_for("zh")
APPROVAL = dict(booking_id=5, gpu="a100", count=4)


@pytest.mark.parametrize(("notice", "message", "line"), [
    (ApprovalNeeded(to="UADMIN", owner="UALICE", duration=timedelta(hours=6), why="team would reach ¥9 of ¥5",
                    **APPROVAL), "<@UALICE> 的 #5（4× a100，6 小时）超出预算：team would reach ¥9 of ¥5。", None),
    (ApprovalDecided(to="UALICE", admin="UADMIN", **APPROVAL), "#5 已由 <@UADMIN> 批准，正在分配。",
     "已由 <@UADMIN> 批准。"),
    (ApprovalDecided(to="UALICE", admin="UADMIN", approved=False, **APPROVAL), "#5 已被 <@UADMIN> 拒绝（超出预算）。",
     "已被 <@UADMIN> 拒绝。"),
    (LaunchHeld(to="UALICE", why="team would reach ¥9 of ¥5", **APPROVAL),
     "#5 未启动：预订后预算或价格有变，现在 team would reach ¥9 of ¥5。因此正在等待管理员审批。",
     "启动时超出预算：team would reach ¥9 of ¥5。等待管理员审批。"),
    (LaunchHeld(to="UALICE", why="w", held=False, **APPROVAL), "#5 未启动：预订后预算或价格有变，现在 w。因此已被拒绝"
     "（over_budget = block）；请让管理员提高预算或代为预订。", "启动时超出预算：w。已拒绝。"),
], ids=["approval-needed", "approved", "denied", "launch-held", "launch-refused"])
def test_approval_notices_speak_chinese_to_a_chinese_reader(notice, message, line):
    rendered = render(notice, CHINESE)
    assert rendered.message["text"] == message and rendered.booking_line == line


def test_an_approval_request_offers_approve_and_deny_on_the_booking():
    message = render(ApprovalNeeded(to="UADMIN", owner="UALICE", **APPROVAL), ENGLISH).message
    assert [(b["action_id"], b["value"]) for b in message["blocks"][-1]["elements"]] == [
        ("booking_approve", "5"), ("booking_deny", "5")]


def test_budget_crossings_speak_chinese_with_chinese_money():
    crossed = BudgetCrossed(to="UALICE", scope="user:UALICE", percent=80, spent=Decimal(70), limit=Decimal(100),
                            currency="CNY", period="2026-11", committed=Decimal(15), reached=85)
    assert render(crossed, CHINESE).message["text"] == \
        "💸 user:UALICE的预算在2026 年 11 月已超过 80%：已支出 ¥70.00，另有 ¥15.00 已占用，预算 ¥100.00（85%）。"
    assert render(crossed, ENGLISH).message["text"] == \
        "💸 Budget user:UALICE passed 80 % in 2026-11: CN¥70.00 spent + CN¥15.00 committed of CN¥100.00 (85 %)."
    forecast = replace(crossed, forecast=Decimal(130), reached=130)
    assert forecast.key != crossed.key
    assert render(forecast, CHINESE).message["text"] == \
        "📈 按本月的速度，user:UALICE到 2026 年 11 月底将支出 ¥130.00，超出其预算 ¥100.00（130%）。"


def test_a_digest_chart_is_a_png_shared_with_its_comment_in_the_readers_language():
    chart = DigestChart(channel="CDIGEST", period="2026-11-02", month="2026-11", month_spent=Decimal(30),
                        month_limit=Decimal(500), month_forecast=Decimal(450), daily=(Decimal(10), Decimal(20)))
    english, chinese = render(chart, ENGLISH), render(chart, CHINESE)
    assert english.message is None and english.upload.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert (english.upload.filename, english.upload.title, english.upload.comment) == (
        "spend-2026-11-02.png", "Spend 2026-11", "Daily spend in 2026-11 against the budget (through 2026-11-02).")
    assert (chinese.upload.title, chinese.upload.comment) == ("2026 年 11 月支出",
                                                              "2026 年 11 月每日支出与预算对比（截至 2026-11-02）。")
