"""The reader's language: locale names, translators, and money in each language (Babel's CLDR data)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from gpubot.bot.i18n import ENGLISH, babel_locale, format_money, language_of, money_for, translator_for
from gpubot.domain.money import format_money as domain_format_money


@pytest.mark.parametrize(("locale", "language"), [
    ("zh-CN", "zh"), ("zh_CN", "zh"), ("zh", "zh"), ("ZH-cn", "zh"), ("zh-TW", "zh"), (" zh ", "zh"),
    ("en", "en"), ("en-US", "en"), ("en_GB", "en"), ("EN", "en"),
    ("ja-JP", None), ("fr", None), ("", None), (None, None), ("zhx", None),
])
def test_language_of_reads_slack_and_posix_spellings(locale, language):
    assert language_of(locale) == language


def test_translator_for_chinese_spellings_speaks_chinese_and_anything_else_english():
    for locale in ("zh-CN", "zh_CN", "zh"):
        tr = translator_for(locale)
        assert tr.gettext("Release") == "释放" and tr.gettext("Extend 1h") == "续期 1 小时"
        assert tr.ngettext("… and {count} more line.", "… and {count} more lines.", 3) == "… 还有 {count} 行。"
    for locale in ("en", "en-US", "ja-JP", None):
        tr = translator_for(locale)
        assert tr is ENGLISH and tr.gettext("Release") == "Release"
        assert tr.ngettext("… and {count} more line.", "… and {count} more lines.", 1) == "… and {count} more line."


def test_a_message_the_catalog_lacks_stays_english():
    assert translator_for("zh").gettext("A sentence no catalog has") == "A sentence no catalog has"


@pytest.mark.parametrize(("currency", "english", "chinese"), [
    ("CNY", "CN¥1,234.51", "¥1,234.51"),
    ("JPY", "¥1,235", "JP¥1,235"),
    ("USD", "$1,234.51", "US$1,234.51"),
    ("EUR", "€1,234.51", "€1,234.51"),
])
def test_yuan_and_yen_never_share_a_symbol_in_either_language(currency, english, chinese):
    amount = Decimal("1234.505")  # half-up: .505 → .51 (and ¥1,234.505 → ¥1,235)
    assert format_money(amount, currency, "en") == english
    assert format_money(amount, currency, "zh-CN") == chinese
    assert money_for(translator_for("zh"), amount, currency) == chinese
    assert money_for(ENGLISH, amount, currency) == english


def test_money_rounds_half_up_keeps_the_sign_and_never_shows_minus_zero():
    assert domain_format_money(Decimal("2.005")) == "$2.01"
    assert domain_format_money(Decimal("-58.085")) == "-$58.09"
    assert domain_format_money(Decimal("-0.001")) == "$0.00"
    assert domain_format_money(Decimal("1234567.5"), "USD") == "$1,234,567.50"


def test_babel_locale_defaults_to_english():
    assert (babel_locale("zh-CN"), babel_locale("en-US"), babel_locale("ja"), babel_locale(None)) == \
        ("zh_CN", "en", "en", "en")
