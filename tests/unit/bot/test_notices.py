"""Renderers: every notice renders, user-supplied text never becomes a live mention or breaks a code fence,
and each offered action becomes the Slack action id its listener answers."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta

import pytest
from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.listeners.actions import _ACTIONS
from gpubot.bot.listeners.watches import BOOK_WATCHED
from gpubot.bot.notices import ACTION_IDS, escape, render
from gpubot.domain.notices import (
    NOTICE_TYPES,
    BookingRequested,
    DigestChart,
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


def test_an_ended_watch_says_how_long_it_watched_in_the_readers_language():
    ended = WatchEnded(to="U1", watch_id=3, gpu="h100", count=8, watched_for=timedelta(hours=6))
    assert render(ended, ENGLISH).message["text"] == "Watch #3 (8× h100) ended: no capacity appeared in 6h."
    chinese = render(ended, translator_for("zh")).message["text"]
    assert chinese == "有卡提醒 #3（8× h100）已结束：6 小时内一直没有空闲的卡。"


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
    assert "又越过上限 2 次" in render(update, translator_for("zh")).message["text"]
