"""Options of `/gpu` commands: `--spot`, `--provider lambda`, `--max-price=2.5`, `--note "..."` and more."""

from __future__ import annotations

from gpubot.domain.catalog import closest
from gpubot.domain.grammar_durations import is_unit_word
from gpubot.domain.grammar_moments import is_moment_word
from gpubot.domain.grammar_text import EXAMPLES, Token, fail, shown

__all__ = ["OPTIONS", "OPTION_EXAMPLES", "Options", "split_options"]

Options = dict[str, str | bool]

# name → example; an example without a value marks a flag.
OPTION_EXAMPLES: dict[str, str] = {
    "spot": "--spot",
    "provider": "--provider lambda",
    "region": "--region us-east-1",
    "max-price": "--max-price 2.50",
    "project": "--project llm",
    "at": "--at tomorrow 09:00",
    "night": "--night",
    "note": '--note "fine-tune run"',
    "for": "--for 2h",
    "within": "--within 6h",
    "until": "--until 18:00",
    "by": "--by user",
    "cuda": "--cuda 12.1",
    "image": "--image pytorch/pytorch:2.3.0-cuda12.1-cudnn8-devel",
}
OPTIONS: dict[str, bool] = {name: " " in example for name, example in OPTION_EXAMPLES.items()}
_MOMENT_OPTIONS = ("at", "until")
_DURATION_OPTIONS = ("for", "within")


def _how(command: str, name: str) -> str:
    return f"{EXAMPLES.get(command, EXAMPLES['book'])} {OPTION_EXAMPLES.get(name, '')}".strip()


def _name_and_inline(token: Token) -> tuple[str, Token | None]:
    name, equals, value = token.raw.partition("=")
    name = name.replace('"', "").lstrip("-").lower().replace("_", "-")
    return name, (Token(value) if equals else None)


def _check_allowed(name: str, allowed: tuple[str, ...], command: str) -> None:
    if name not in OPTIONS:
        guess = closest(name, list(OPTIONS))
        raise fail(f"Unknown option `--{shown(name)}`", _how(command, guess or ""), guess and f"--{guess}")
    if name not in allowed:
        takes = ", ".join(f"`--{a}`" for a in allowed) if allowed else "no options"
        raise fail(f"`--{name}` does not apply to `{command}`, which takes {takes}", EXAMPLES[command])


def _first_value(name: str, inline: Token | None, tokens: list[Token], i: int, how: str) -> tuple[Token, int]:
    if inline is not None:
        value, i = inline, i
    elif i < len(tokens) and not tokens[i].is_option:
        value, i = tokens[i], i + 1
    else:
        raise fail(f"`--{name}` needs a value", how)
    if not value.text.strip():
        raise fail(f"`--{name}` needs a value", how)
    return value, i


def _rest_of_words(first: Token, tokens: list[Token], i: int) -> tuple[str, int]:
    words = [first.text]
    while not first.quoted and i < len(tokens) and not tokens[i].is_option:
        words.append(tokens[i].text)
        i += 1
    return " ".join(words), i


def _take_value(name: str, inline: Token | None, tokens: list[Token], i: int, how: str) -> tuple[str, int]:
    first, i = _first_value(name, inline, tokens, i, how)
    if name == "note":
        return _rest_of_words(first, tokens, i)
    following = tokens[i].text if i < len(tokens) else ""
    if name in _MOMENT_OPTIONS and not first.quoted:
        return _moment_words(first, tokens, i)
    if name in _DURATION_OPTIONS and is_unit_word(following) and not tokens[i].quoted:
        return f"{first.text} {following}", i + 1  # `--for 2 hours`
    return first.text.strip(), i


def _moment_words(first: Token, tokens: list[Token], i: int) -> tuple[str, int]:
    """An unquoted moment runs over the words that can be part of one: `--at next monday 9am`, `--at 明天 9点`."""
    words = [first.text]
    while is_moment_word(words[-1]) and i < len(tokens) and not tokens[i].quoted and is_moment_word(tokens[i].text):
        words.append(tokens[i].text)
        i += 1
    return " ".join(words), i


def _take(
    name: str, inline: Token | None, tokens: list[Token], i: int, command: str
) -> tuple[str | bool, int]:
    how = _how(command, name)
    if OPTIONS[name]:
        return _take_value(name, inline, tokens, i, how)
    if inline is not None:
        raise fail(f"`--{name}` takes no value", how)
    return True, i


def split_options(tokens: list[Token], allowed: tuple[str, ...], command: str) -> tuple[list[Token], Options]:
    """Separate positional words from options; unknown, misplaced, repeated or empty options are refused."""
    positional: list[Token] = []
    found: Options = {}
    i = 0
    while i < len(tokens):
        token, i = tokens[i], i + 1
        if not token.is_option:
            positional.append(token)
            continue
        name, inline = _name_and_inline(token)
        _check_allowed(name, allowed, command)
        if name in found:
            raise fail(f"`--{name}` is given twice", _how(command, name))
        found[name], i = _take(name, inline, tokens, i, command)
    return positional, found
