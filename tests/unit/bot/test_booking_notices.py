"""Renderers of the notices along a booking's life: why it ended, in the reader's language, and what a job given up
before it started cost."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.notices import render
from gpubot.domain.notices import BookingReleased, BootAbandoned, ReleaseWhy


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
