"""The message catalogs are complete and current: every message the code shows (extracted the way `make i18n`
extracts it, with the Makefile's I18N_SOURCES and I18N_KEYWORDS) is in the template and translated into every
language, with the same `{fields}`; nothing stale is left in them."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from gpubot.bot.i18n import DOMAIN, LANGUAGES, LOCALE_DIR

ROOT = Path(__file__).resolve().parents[3]
FIX = "run `make i18n`, then translate what it reports (docs/operations.md, Languages)"


def _make_variable(name: str) -> list[str]:
    found = re.search(rf"^{name} := (.*)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert found, f"the Makefile defines no {name}"
    return found[1].split()


def _keywords() -> dict[str, tuple[int, ...] | None]:
    words = _make_variable("I18N_KEYWORDS")
    keywords: dict[str, tuple[int, ...] | None] = {}
    for flag, spec in zip(words[::2], words[1::2], strict=True):
        assert flag == "-k"
        name, _, places = spec.partition(":")
        keywords[name] = tuple(int(p) for p in places.split(",")) if places else None
    return keywords


def _in_code() -> set[str | tuple[str, ...]]:
    keywords = _keywords()
    found = set()
    for source in _make_variable("I18N_SOURCES"):
        for _file, _line, message, _comments, _context in extract_from_dir(ROOT / source, keywords=keywords,
                                                                            comment_tags=("TRANSLATORS:",)):
            found.add(message)
    return found


def _ids(path: Path, locale: str | None = None) -> dict:
    with path.open("rb") as file:
        catalog = read_po(file, locale=locale)
    return {m.id: m for m in catalog if m.id}


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


CODE = _in_code()


def test_the_template_holds_exactly_the_messages_of_the_code():
    template = set(_ids(LOCALE_DIR / f"{DOMAIN}.pot"))
    assert CODE, "no message was extracted from the code"
    assert not CODE - template, f"messages missing from {DOMAIN}.pot ({FIX}): {sorted(map(str, CODE - template))}"
    assert not template - CODE, f"stale messages in {DOMAIN}.pot ({FIX}): {sorted(map(str, template - CODE))}"


@pytest.mark.parametrize("locale", [loc for loc in LANGUAGES.values() if loc != "en"])
def test_every_message_is_translated_with_the_same_fields(locale):
    entries = _ids(LOCALE_DIR / locale / "LC_MESSAGES" / f"{DOMAIN}.po", locale)
    missing = [str(m) for m in CODE if m not in entries]
    assert not missing, f"not in {locale}'s catalog ({FIX}): {missing}"
    stale = [str(m) for m in entries if m not in CODE]
    assert not stale, f"stale in {locale}'s catalog ({FIX}): {stale}"
    untranslated = [str(m.id) for m in entries.values()
                    if m.fuzzy or not all(m.string if isinstance(m.string, tuple) else (m.string,))]
    assert not untranslated, f"untranslated or fuzzy in {locale}: {untranslated}"
    for entry in entries.values():
        source = entry.id if isinstance(entry.id, str) else entry.id[-1]
        for text in entry.string if isinstance(entry.string, tuple) else (entry.string,):
            assert _fields(text) == _fields(source), f"{locale}: {entry.id!r} → {text!r} changes the {{fields}}"
