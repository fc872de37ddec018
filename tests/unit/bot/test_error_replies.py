"""Refusals as the bot shows them: the engine's error carries the data, the bot words Slack's mention."""

from __future__ import annotations

from gpubot.bot.i18n import translator_for
from gpubot.bot.replies import user_error_text
from gpubot.domain.errors import NotYours, Refused

NOT_YOURS = "#{booking} belongs to {owner}; only its owner or an admin can change it."


def test_a_refusal_names_the_owner_as_a_mention_that_the_engine_never_wrote():
    refused = NotYours(NOT_YOURS, booking=4, owner="UALICE")
    assert str(refused) == "#4 belongs to UALICE; only its owner or an admin can change it."
    assert user_error_text(refused) == "⚠️ #4 belongs to <@UALICE>; only its owner or an admin can change it."


def test_other_refusals_are_translated_and_show_their_values_as_they_are():
    refused = Refused("Watch #{watch} is already {state}.", watch=2, state="cancelled")
    assert user_error_text(refused) == "⚠️ Watch #2 is already cancelled."
    assert user_error_text(refused, translator_for("zh")) == "⚠️ 有卡提醒 #2 已是“已取消”状态。"
