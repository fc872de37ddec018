"""The reader's language: the translator a renderer speaks through (English is the source language).

Renderers take a `Translator` and wrap every sentence they show in `tr.gettext(...)` / `tr.ngettext(...)`, so
that the catalogs (English and 简体中文) can be extracted from them."""

from __future__ import annotations

import gettext
from typing import Protocol

__all__ = ["ENGLISH", "Translator"]


class Translator(Protocol):
    """What a renderer needs to speak the reader's language."""

    def gettext(self, message: str, /) -> str:
        """The message in the reader's language."""

    def ngettext(self, singular: str, plural: str, n: int, /) -> str:
        """The singular or plural message for n, in the reader's language."""


ENGLISH: Translator = gettext.NullTranslations()
