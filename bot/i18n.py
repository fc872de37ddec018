"""The reader's language: the translator a renderer speaks through (English is the source language).

Renderers take a `Translator` and wrap every sentence they show in `tr.gettext(...)` / `tr.ngettext(...)`, so
that the catalogs (English and 简体中文) can be extracted from them. The catalogs are gettext `.po` files of the
domain `gpubot` under bot/locale/, compiled with Babel when a process first needs a language (see
docs/operations.md, "Languages")."""

from __future__ import annotations

import gettext
import io
import re
from datetime import datetime, timedelta, tzinfo
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Protocol

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations
from gpubot.domain import money
from gpubot.domain.durations import format_duration

__all__ = ["DOMAIN", "ENGLISH", "LANGUAGES", "LOCALE_DIR", "N_", "LanguageBook", "Speech", "Translator",
           "babel_locale", "duration_for", "format_money", "language_of", "locale_of", "money_for", "sentences",
           "translator_for"]

DOMAIN = "gpubot"
LOCALE_DIR = Path(__file__).parent / "locale"
LANGUAGES = {"en": "en", "zh": "zh_CN"}  # what `/gpu lang` and `team.language` take → the catalog's locale


class LanguageBook(Protocol):
    """Where the language each person chose with `/gpu lang` is kept (the ledger's people table)."""

    def chosen(self, user_id: str, /) -> str | None:
        """The language `user_id` chose (`en`, `zh`), or None."""

    def choose(self, user_id: str, language: str | None, now: datetime, /) -> None:
        """Record the language `user_id` chose (None: follow Slack's locale again)."""


class Translator(Protocol):
    """What a renderer needs to speak the reader's language."""

    def gettext(self, message: str, /) -> str:
        """The message in the reader's language."""

    def ngettext(self, singular: str, plural: str, n: int, /) -> str:
        """The singular or plural message for n, in the reader's language."""


class Speech:
    """A Translator that also knows its Babel locale, so money and numbers follow the words, and its reader's
    time zone (None: UTC), so times do too (bot.times)."""

    def __init__(self, locale: str, translations: gettext.NullTranslations, zone: tzinfo | None = None) -> None:
        self.locale, self._translations, self.zone = locale, translations, zone

    def gettext(self, message: str, /) -> str:
        """The message in this language (the English text when the catalog has none)."""
        return self._translations.gettext(message)

    def ngettext(self, singular: str, plural: str, n: int, /) -> str:
        """The singular or plural message for n, in this language."""
        return self._translations.ngettext(singular, plural, n)

    def __repr__(self) -> str:
        return f"Speech({self.locale!r}, zone={getattr(self.zone, 'key', self.zone)!r})"


ENGLISH: Translator = Speech("en", gettext.NullTranslations())


def N_(message: str) -> str:
    """Mark a message for the catalogs where it is written; it is translated later, where it is shown."""
    return message


def language_of(locale: str | None) -> str | None:
    """`en` or `zh` for a locale or language as Slack, a person or the policy writes it (`zh-CN`, `zh_CN`,
    `zh`, `en-US`, `EN`); None when it names no language gpubot speaks."""
    if not locale:
        return None
    head = locale.strip().replace("-", "_").split("_")[0].lower()
    return head if head in LANGUAGES else None


def babel_locale(locale: str | None) -> str:
    """The Babel locale for numbers and money (`en` or `zh_CN`); English for anything else."""
    return LANGUAGES[language_of(locale) or "en"]


def translator_for(locale: str | None, zone: tzinfo | None = None) -> Translator:
    """The translator for a locale (`zh-CN`, `zh_CN`, `zh` → 简体中文; English for anything else) and a reader in
    `zone` (their times shown there; None: UTC)."""
    language = language_of(locale) or "en"
    if language == "en":
        return ENGLISH if zone is None else Speech("en", gettext.NullTranslations(), zone)
    return Speech(LANGUAGES[language], _compiled(LANGUAGES[language]), zone)


@cache
def _compiled(locale: str) -> Translations:
    """The `.po` catalog of `locale` compiled by Babel into gettext translations, once per process; fuzzy
    entries are left out, so an unchecked translation shows the English text."""
    path = LOCALE_DIR / locale / "LC_MESSAGES" / f"{DOMAIN}.po"
    with path.open("rb") as po:
        catalog = read_po(po, locale=locale, domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)
    compiled.seek(0)
    return Translations(compiled, domain=DOMAIN)


def sentences(*parts: str) -> str:
    """Sentences one after the other: a space after an English full stop, none after Chinese punctuation (`。`,
    `）`)."""
    text = ""
    for part in parts:
        text += part if not text or text.endswith(("。", "！", "？", "）", "”")) else " " + part
    return text


def locale_of(tr: Translator) -> str:
    """The Babel locale `tr` speaks (`en`, `zh_CN`); English for a translator that does not say."""
    return getattr(tr, "locale", "en")


def month_for(tr: Translator, month: str) -> str:
    """A month as the ledger names it (`2026-11`) the way the reader writes it: `2026 年 11 月` in Chinese, as
    it is in English; any other text unchanged."""
    found = re.fullmatch(r"(\d{4})-(\d{2})", month)
    if found is None or not locale_of(tr).startswith("zh"):
        return month
    return f"{found.group(1)} 年 {int(found.group(2))} 月"


def money_for(tr: Translator, amount: Decimal, currency: str) -> str:
    """Money in the language `tr` speaks (English for a translator that does not say)."""
    return format_money(amount, currency, getattr(tr, "locale", "en"))


def format_money(amount: Decimal, currency: str, locale: str | None = None) -> str:
    """Money in the reader's language (Babel): `$1,234.50`, `CN¥58.00`, `¥1,235` in English; `US$1,234.50`,
    `¥58.00`, `JP¥1,235` in Chinese."""
    return money.format_money(amount, currency, babel_locale(locale))


def duration_for(tr: Translator, value: timedelta) -> str:
    """A duration in the language `tr` speaks: `1h57m` in English, `1 小时 57 分钟` in Chinese (glossary units)."""
    return format_duration(value, tr.gettext)
