"""Which font the digest's chart is drawn with: the most preferred CJK font installed, and whether its words need
one at all (pure: the installed fonts are a list here)."""

from __future__ import annotations

from gpubot.scheduling.money.chart_fonts import CJK_FONTS, cjk_font, needs_cjk


def test_the_most_preferred_cjk_font_installed_is_chosen():
    installed = ["DejaVu Sans", "WenQuanYi Zen Hei", "Noto Sans CJK JP", "Noto Sans CJK SC", "Liberation Serif"]
    assert cjk_font(installed) == "Noto Sans CJK SC"
    assert cjk_font(["DejaVu Sans", "Droid Sans Fallback"]) == "Droid Sans Fallback"
    assert CJK_FONTS[0] == "Noto Sans CJK SC"  # Debian's fonts-noto-cjk, the one docs/operations.md names


def test_without_a_cjk_font_there_is_none_to_choose():
    assert cjk_font(["DejaVu Sans", "Liberation Sans"]) is None
    assert cjk_font([]) is None


def test_only_chinese_japanese_korean_or_full_width_words_need_a_cjk_font():
    assert needs_cjk(["spent that day", "US$1,500.00"]) is False
    assert needs_cjk(["budget", "当日支出"]) and needs_cjk(["（"]) and needs_cjk(["予算"]) and needs_cjk(["예산"])
