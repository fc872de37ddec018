"""Replies for /gpu lang: choose the language gpubot speaks to you, forget the choice, or ask which applies."""

from __future__ import annotations

from gpubot.bot.context import BotContext
from gpubot.bot.i18n import Translator, translator_for
from gpubot.bot.views import Message, section_message
from gpubot.domain import grammar

__all__ = ["on_lang"]


def _why(tr: Translator, source: str) -> str:
    if source == "chosen":
        return tr.gettext("you chose it with `/gpu lang`")
    if source == "slack":
        return tr.gettext("your Slack language")
    return tr.gettext("the team's language")


def _current(tr: Translator, source: str) -> str:
    # TRANSLATORS: shown only while this language is in force: name this language, and how to go back to English.
    return tr.gettext("gpubot speaks English to you ({why}). `/gpu lang zh` switches to 简体中文; `/gpu lang auto` "
                      "follows your Slack language.").format(why=_why(tr, source))


def on_lang(ctx: BotContext, cmd: grammar.Lang, command: dict, client) -> Message:
    """`/gpu lang zh|en|auto`: record the choice in the ledger and answer in the language now in force;
    `/gpu lang` alone says which language applies and why."""
    user = command["user_id"]
    if cmd.language is not None:
        ctx.languages.choose(user, None if cmd.language == "auto" else cmd.language, ctx.engine.now())
    language, source = ctx.language(user)
    tr = translator_for(language)
    text = _current(tr, source)
    if cmd.language == "auto":
        text = tr.gettext("Done: gpubot follows your Slack language again. {status}").format(status=text)
    elif cmd.language is not None:
        text = tr.gettext("Done. {status}").format(status=text)
    return section_message(text, tr)
