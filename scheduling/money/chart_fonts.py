"""Which font draws the digest's chart: a CJK one when its words are Chinese (or Japanese, Korean) and one is
installed (Debian: `fonts-noto-cjk`; `fc-list :lang=zh` lists them), else the chart falls back to English words,
which matplotlib's own DejaVu Sans always draws (docs/operations.md, Languages)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

__all__ = ["CJK_FONTS", "cjk_font", "installed_fonts", "needs_cjk"]

log = logging.getLogger(__name__)

# Preferred first: the fonts Linux distributions, macOS and Windows ship for Simplified Chinese.
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN", "WenQuanYi Zen Hei",
             "WenQuanYi Micro Hei", "Noto Sans CJK JP", "Noto Sans CJK TC", "Droid Sans Fallback", "AR PL UMing CN",
             "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "SimHei")
_CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")


def needs_cjk(texts: Iterable[str]) -> bool:
    """Whether any of `texts` has a character DejaVu Sans cannot draw (Chinese, Japanese, Korean, full-width)."""
    return any(_CJK.search(text) for text in texts)


def cjk_font(installed: Iterable[str]) -> str | None:
    """The most preferred CJK font among the `installed` family names, None when there is none."""
    names = set(installed)
    return next((font for font in CJK_FONTS if font in names), None)


def installed_fonts() -> set[str]:
    """The family names matplotlib can draw with on this machine."""
    from matplotlib import font_manager

    return {entry.name for entry in font_manager.fontManager.ttflist}
