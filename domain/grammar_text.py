"""Text handling for the `/gpu` grammar: cleaning, tokens, and the one way parse errors are worded."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from gpubot.domain.errors import ParseError
from gpubot.domain.grammar_types import MAX_TEXT

__all__ = ["EXAMPLES", "N_", "Token", "clean_text", "fail", "shown", "tokenize"]

EXAMPLES: dict[str, str] = {
    "book": "/gpu book a100x4 6h",
    "quote": "/gpu quote a100x4 6h",
    "status": "/gpu status all",
    "queue": "/gpu queue",
    "cancel": "/gpu cancel 12",
    "release": "/gpu release 12",
    "extend": "/gpu extend 12 2h",
    "prices": "/gpu prices",
    "cost": "/gpu cost month by user",
    "budget": "/gpu budget",
    "help": "/gpu help book",
    "admin": "/gpu admin release 12",
    "admin provider": "/gpu admin provider pause lambda",
    "admin budget": "/gpu admin budget set team 5000",
    "watch": "/gpu watch h100x8 2h",
    "watches": "/gpu watches",
    "unwatch": "/gpu unwatch 3",
    "lang": "/gpu lang zh",
}

# What NFKC leaves alone but phones and Slack produce: smart quotes, dashes, the multiplication sign.
_LOOKALIKES = str.maketrans(
    {
        "“": '"', "”": '"', "„": '"', "‟": '"', "«": '"', "»": '"',
        "‘": "'", "’": "'", "‚": "'", "‛": "'",
        "—": "--", "–": "--", "―": "--", "‒": "-", "‐": "-", "−": "-",
        "×": "x",
    }
)
_DROPPED = frozenset({"Cc", "Cf", "Cs"})  # control, format (zero-width, bidi), lone surrogates
_TOKEN = re.compile(r'(?:"[^"]*"?|[^\s"]++)+')
_OPTION = re.compile(r"^-+[A-Za-z]")


@dataclass(frozen=True)
class Token:
    """One word of the command; `raw` keeps its quotes, `text` drops them."""

    raw: str

    @property
    def text(self) -> str:
        """The word without its quote marks."""
        return self.raw.replace('"', "")

    @property
    def quoted(self) -> bool:
        """Whether any part of the word was in quotes."""
        return '"' in self.raw

    @property
    def is_option(self) -> bool:
        """An unquoted word starting with dashes and a letter: `--spot`, `-h`."""
        return bool(_OPTION.match(self.raw))


def N_(message: str) -> str:
    """Mark a refusal's template for the catalogs where it is kept apart from its `fail` call (a table)."""
    return message


def shown(word: str, limit: int = 40) -> str:
    """A user's word made safe to show inside backticks: no backticks, no angle brackets (a chat would read
    a bracketed `!channel` as a mention even there), not too long."""
    word = word.replace("`", "'").replace("<", "‹").replace(">", "›")
    return word if len(word) <= limit else word[: limit - 1] + "…"


def fail(what: str, how: str, suggestion: str | None = None, **params: object) -> ParseError:
    """A ParseError that says what was wrong, a guess when there is one, and the right form. `what` may be a
    template with `{name}` fields filled from `params`, so the bot can show it translated."""
    said = what.format(**params) if params else what
    guess = f" – did you mean `{suggestion}`?" if suggestion else "."
    return ParseError(f"{said}{guess} Write it like `{how}`.", suggestion, what=what, how=how, what_params=params)


def _clean_char(char: str) -> str:
    if char.isspace():
        return " "
    return "" if unicodedata.category(char) in _DROPPED else char


def clean_text(text: str | None) -> str:
    """Refuse over-long text, drop control characters and fold look-alikes (NFKC, smart quotes, dashes)."""
    text = text or ""
    if len(text) > MAX_TEXT:
        raise fail(f"That command is {len(text)} characters long; the limit is {MAX_TEXT}", EXAMPLES["book"])
    stripped = "".join(_clean_char(c) for c in text)
    folded = unicodedata.normalize("NFKC", stripped).translate(_LOOKALIKES)
    return "".join(_clean_char(c) for c in folded).strip()


def tokenize(text: str) -> list[Token]:
    """Split cleaned text into words; "quoted parts" stay whole."""
    return [Token(m.group()) for m in _TOKEN.finditer(text)]
