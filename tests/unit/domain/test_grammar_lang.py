"""`/gpu lang`: the languages people write, and a clear refusal of the rest."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from gpubot.domain import grammar
from gpubot.domain.errors import ParseError

NOW = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "language"), [
    ("lang zh", "zh"), ("lang ZH", "zh"), ("lang zh-CN", "zh"), ("lang zh_CN", "zh"), ("lang 中文", "zh"),
    ("lang chinese", "zh"), ("lang en", "en"), ("lang English", "en"), ("language en", "en"),
    ("lang auto", "auto"), ("lang", None),
])
def test_lang_reads_the_language(text, language):
    assert grammar.parse(text, now=NOW) == grammar.Lang(language)


@pytest.mark.parametrize(("text", "suggestion"), [("lang zhh", "zh"), ("lang fr", None), ("lang zh en", "zh")])
def test_a_bad_language_is_refused_with_the_right_form(text, suggestion):
    with pytest.raises(ParseError) as refused:
        grammar.parse(text, now=NOW)
    assert "`lang` takes `zh` (简体中文), `en` (English) or `auto`" in str(refused.value)
    assert "Write it like `/gpu lang zh`." in str(refused.value)
    assert refused.value.suggestion == suggestion
    assert refused.value.what_params == {"given": text.split(" ", 1)[1]}


def test_the_grammar_reads_chinese_durations():
    for text, hours in (("book a100x4 6小时", 6), ("book a100x4 30分钟", 0.5), ("book a100x4 1天", 24)):
        assert grammar.parse(text, now=NOW).duration.total_seconds() == hours * 3600
