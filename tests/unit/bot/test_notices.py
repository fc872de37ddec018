"""Renderers: every notice renders, user-supplied text never becomes a live mention or breaks a code fence,
and each offered action becomes the Slack action id its listener answers."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.listeners.actions import _ACTIONS
from gpubot.bot.listeners.watches import BOOK_WATCHED
from gpubot.bot.notices import ACTION_IDS, escape, render
from gpubot.domain.notices import (
    NOTICE_TYPES,
    ApprovalDecided,
    ApprovalNeeded,
    BookingReleased,
    BookingRequested,
    BootAbandoned,
    BudgetCrossed,
    DigestChart,
    ExpiryWarning,
    IdleKept,
    IdleReminder,
    IdleSnoozed,
    LaunchHeld,
    Overheat,
    ReleaseWhy,
    WatchEnded,
)

from tests.unit.domain.test_notices import _sample

HOSTILE = "x```<!channel>```&<@UEVE>"
NOT_SHOWN = ("to", "currency", "version", "state")  # an address, a configured code, a button value, an enum


@pytest.mark.parametrize("cls", list(NOTICE_TYPES.values()), ids=list(NOTICE_TYPES))
def test_every_notice_renders_without_a_live_mention_from_its_text_fields(cls):
    notice = _sample(cls)
    hostile = {f.name: HOSTILE for f in fields(cls) if f.type.startswith("str") and f.name not in NOT_SHOWN}
    if cls is DigestChart:  # its period is read as a date, to draw its month
        hostile["period"] = "2026-11-02"
    rendered = render(replace(notice, **hostile), ENGLISH)
    upload = rendered.upload and (rendered.upload.title, rendered.upload.comment)
    shown = json.dumps([rendered.message, rendered.booking_line, upload], ensure_ascii=False)
    assert rendered.message is not None or rendered.booking_line or upload or cls is BookingRequested
    assert "<!channel>" not in shown and "<@UEVE>" not in shown and "```<" not in shown


def test_escape_makes_mentions_links_and_fences_inert():
    assert escape("a & b <!here> ```x```") == "a &amp; b &lt;!here&gt; ˋˋˋxˋˋˋ"
    assert escape(None) == ""


def test_every_action_id_has_a_listener():
    assert set(ACTION_IDS.values()) <= {*_ACTIONS, "booking_extend", BOOK_WATCHED}


def test_an_idle_reminder_offers_keep_snooze_and_release_on_its_booking():
    message = render(IdleReminder(to="U1", booking_id=9, gpu="a100", count=4, provider="lambda"), ENGLISH).message
    buttons = message["blocks"][-1]["elements"]
    assert [(b["action_id"], b["value"]) for b in buttons] == [
        ("idle_keep", "9"), ("idle_snooze", "9"), ("booking_release", "9")]


def test_an_expiry_warning_carries_the_version_of_the_booking_it_shows():
    message = render(ExpiryWarning(to="U1", booking_id=9, gpu="a100", count=4, version="9@active.1764"),
                     ENGLISH).message
    assert {b["value"] for b in message["blocks"][-1]["elements"]} == {"9@active.1764"}
    assert message["text"].startswith("⏰ #9 (4× a100)")


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


def test_an_ended_watch_says_how_long_it_watched_in_the_readers_language():
    ended = WatchEnded(to="U1", watch_id=3, gpu="h100", count=8, watched_for=timedelta(hours=6))
    assert render(ended, ENGLISH).message["text"] == "Watch #3 (8× h100) ended: no capacity appeared in 6h."
    chinese = render(ended, translator_for("zh")).message["text"]
    assert chinese == "有卡提醒 #3（8× h100）已结束：6 小时内一直没有空闲的卡。"


def test_an_overheat_tells_where_and_offers_replace_on_its_booking():
    hot = Overheat(to="U1", booking_id=9, gpu="a100", count=2, temp_c=91.4, gpu_index=1, limit_c=85, util=97,
                   provider="lambda", region="us-east-1", instance="gpubot-9")
    message = render(hot, translator_for("zh")).message
    assert message["text"].startswith("🔥 #9 的 GPU 1 温度过高：91 °C（上限 85 °C），"
                                      "位于 lambda us-east-1（gpubot-9），利用率 97%")
    assert [(b["action_id"], b["value"]) for b in message["blocks"][-1]["elements"]] == [("booking_replace", "9")]


@pytest.mark.parametrize(("notice", "english", "chinese"), [
    (IdleKept(to="UALICE", booking_id=5, gpu="a100", count=4, idle_since=datetime(2026, 11, 2, 9, tzinfo=UTC)),
     "#5 kept: no more idle reminders for this idle stretch.", "#5 已保留：本次闲置期间不再提醒。"),
    (IdleSnoozed(to="UALICE", booking_id=5, gpu="a100", count=4, until=datetime(2026, 11, 2, 11, 7, tzinfo=UTC)),
     "#5: idle checks snoozed until 11:07 UTC.", "#5：闲置检查已推迟到 11:07 UTC（稍后提醒）。"),
], ids=["kept", "snoozed"])
def test_keep_and_snooze_are_confirmed_to_the_owner_in_their_language(notice, english, chinese):
    assert render(notice, ENGLISH).booking_line is None  # a DM only: the booking's message says nothing of it
    assert render(notice, ENGLISH).message["text"] == english
    assert render(notice, CHINESE).message["text"] == chinese


def test_a_digest_chart_is_a_png_shared_with_its_comment_in_the_readers_language():
    chart = DigestChart(channel="CDIGEST", period="2026-11-02", month="2026-11", month_spent=Decimal(30),
                        month_limit=Decimal(500), month_forecast=Decimal(450), daily=(Decimal(10), Decimal(20)))
    english, chinese = render(chart, ENGLISH), render(chart, CHINESE)
    assert english.message is None and english.upload.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert (english.upload.filename, english.upload.title, english.upload.comment) == (
        "spend-2026-11-02.png", "Spend 2026-11", "Daily spend in 2026-11 against the budget (through 2026-11-02).")
    assert (chinese.upload.title, chinese.upload.comment) == ("2026 年 11 月支出",
                                                              "2026 年 11 月每日支出与预算对比（截至 2026-11-02）。")


def _released_line(tr, **why) -> str:
    notice = BookingReleased(to="U1", booking_id=4, gpu="a100", count=4, ran=timedelta(hours=2), cost=Decimal("5"),
                             **why)
    return render(notice, tr).booking_line


def test_why_a_booking_ended_is_worded_in_the_readers_language():
    zh = translator_for("zh")
    assert _released_line(ENGLISH, why=ReleaseWhy.RELEASED) == \
        "Released (released by its owner) after 2h; it cost $5.00."
    assert _released_line(zh, why=ReleaseWhy.RELEASED) == "已释放（由所有者释放），运行 2 小时，费用 US$5.00。"
    assert _released_line(zh, why=ReleaseWhy.CANCELLED_BOOTING, by="UADMIN").startswith(
        "已释放（启动期间被 <@UADMIN> 取消）")
    assert _released_line(ENGLISH, why=ReleaseWhy.IDLE, idle_for=timedelta(minutes=45)).startswith(
        "Released (idle for 45m) after 2h")
    assert _released_line(zh, why=ReleaseWhy.IDLE, idle_for=timedelta(minutes=45)).startswith(
        "已释放（闲置了 45 分钟）")
    assert _released_line(ENGLISH, why=ReleaseWhy.REPLACED, replaced_by=9).startswith("Released (replaced by #9)")
    assert _released_line(zh, why=ReleaseWhy.EXPIRED).startswith("已释放（预订时长已到）")


def test_a_release_owed_before_its_why_was_kept_shows_its_english_reason():
    assert _released_line(translator_for("zh"), reason="its time was up <@U2>").startswith(
        "已释放（its time was up &lt;@U2&gt;）")


def test_a_job_given_up_before_it_started_says_nothing_was_billed():
    """A Slurm job cancelled while it waited in the cluster's queue (which bills nothing) cost nothing: the DM says
    so rather than naming a billed wait."""
    waited = BootAbandoned(to="U1", booking_id=12, gpu="a100", count=4, provider="lab", region="gpu",
                           outcome="queue_timeout", ran=timedelta(0), limit=timedelta(hours=4))
    assert render(waited, ENGLISH).message["text"] == (
        "#12: lab gpu still had the job in its queue after 4h; it was cancelled (nothing was billed). Trying the next "
        "offer.")
    assert "未产生任何费用" in render(waited, translator_for("zh")).message["text"]
    billed = replace(waited, provider="aws", region="us-east-1", outcome="not_ready", ran=timedelta(minutes=15),
                     limit=timedelta(minutes=15))
    assert "its 15m of booting are billed" in render(billed, ENGLISH).message["text"]


def test_the_ready_dm_says_telemetry_is_coming_and_only_the_no_telemetry_dm_carries_the_agent_line():
    from gpubot.domain.notices import BookingReady, TelemetryStale

    line = ("curl -fsSL -o gpubot-agent.py https://x/agent && echo 'ab  gpubot-agent.py' | sha256sum -c - && "
            "(GPUBOT_AGENT_TOKEN=gpa_t nohup python3 gpubot-agent.py --url https://x >gpubot-agent.log 2>&1 &)")
    ready = render(BookingReady(to="U1", booking_id=7, gpu="a100", count=1, provider="sim", region="r",
                                connect="ssh root@h", telemetry_wait=timedelta(minutes=5)), ENGLISH).message["text"]
    assert "GPU telemetry (for idle and temperature checks) is on its way" in ready and "within 5m" in ready
    assert "sha256sum" not in ready
    assert "on its way" not in render(BookingReady(to="U1", booking_id=7, gpu="a100", count=1, connect="ssh h"),
                                      ENGLISH).message["text"]  # no agent served: nothing promised
    stale = render(TelemetryStale(to="U1", booking_id=7, gpu="a100", count=1, silent_for=timedelta(minutes=5),
                                  agent_command=line), ENGLISH).message["text"]
    shown = stale.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")  # as Slack's client shows it
    assert "&&" not in stale and f"starts it: `{line}`" in shown  # escaped as Slack asks, copied as typed
    assert "starts it" not in render(TelemetryStale(to="U1", booking_id=7, gpu="a100", count=1), ENGLISH
                                     ).message["text"]


def test_an_alert_update_shows_the_folded_count_and_the_latest_reading_and_keeps_replace_while_open():
    from gpubot.domain.notices import ProviderAlert

    update = ProviderAlert(kind="overheat", alert_key="o", summary="#7 GPU 0 is at 95 °C", alert_id=3, replace=7,
                           folded=2, latest_gpu=1, latest_value=96.4,
                           latest_at=datetime(2026, 12, 5, 4, 5, 6, tzinfo=UTC))
    message = render(update, ENGLISH).message
    assert message["text"] == ("🚨 [overheat] #7 GPU 0 is at 95 °C\n🔁 Crossed the limit 2 more times since, folded "
                               "into this alert (not paged); latest: GPU 1 at 96 °C at 04:05:06 UTC.")
    assert [b["value"] for b in message["blocks"][-1]["elements"]] == ["7"]
    closed = render(replace(update, closed=True, replace=None, folded=1), ENGLISH).message
    assert closed["text"].startswith("✅ Resolved [overheat]") and "1 more time since" in closed["text"]
    assert "blocks" not in closed or "elements" not in json.dumps(closed.get("blocks"))
    assert "又越过上限 2 次" in render(update, CHINESE).message["text"]
