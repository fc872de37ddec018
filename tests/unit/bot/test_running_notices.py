"""Renderers of the notices about a running machine: the buttons an idle reminder, an expiry warning and an
overheat offer, keep and snooze confirmed in the owner's language, and the agent's line only when telemetry is
missing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from gpubot.bot.i18n import ENGLISH, translator_for
from gpubot.bot.notices import render
from gpubot.domain.notices import (
    BookingReady,
    ExpiryWarning,
    IdleKept,
    IdleReminder,
    IdleSnoozed,
    Overheat,
    TelemetryStale,
)

CHINESE = translator_for("zh")


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


def test_the_ready_dm_says_telemetry_is_coming_and_only_the_no_telemetry_dm_carries_the_agent_line():
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
