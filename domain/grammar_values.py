"""Values inside `/gpu` commands: GPU shapes, durations, ids, prices and provider names."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

from domain.catalog import closest, resolve_gpu, suggest_gpu
from domain.cuda import cuda_version
from domain.durations import format_duration, parse_duration
from domain.grammar_text import fail, shown
from domain.grammar_types import Limits, Shape

__all__ = [
    "looks_like_duration",
    "merge_shape_words",
    "parse_amount",
    "parse_cuda",
    "parse_id",
    "parse_image",
    "parse_price",
    "parse_provider",
    "parse_shape",
    "parse_span",
]

_SEPARATORS = ("x", ":", "*")
_SUFFIX = re.compile(r"^(?P<gpu>.+)[x:*](?P<n>[+-]?[0-9]+)$")
_PREFIX = re.compile(r"^(?P<n>[+-]?[0-9]+)[x:*](?P<gpu>.+)$")
_COUNT_ONLY = re.compile(r"^[+-]?[0-9]+$")
_COUNT_SUFFIX = re.compile(r"^[x:*][+-]?[0-9]+$")
_DURATION = re.compile(r"^(?:[0-9]+(?:\.[0-9]+)?[smhdw])+$")
_NUMBER = re.compile(r"^(?:[0-9]{1,12}(?:\.[0-9]{1,6})?|\.[0-9]{1,6})$")
_DIGIT_LOOKALIKES = str.maketrans({"o": "0", "l": "1", "i": "1"})
_ID = re.compile(r"^#?([0-9]{1,12})$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,199}$")


def _glues(prev: str, word: str) -> bool:
    if prev.lower() == "or" or word.lower() == "or":
        return False
    return word.lower() in _SEPARATORS or bool(_COUNT_SUFFIX.match(word.lower())) or prev.endswith(
        _SEPARATORS
    )


def merge_shape_words(words: list[str]) -> list[str]:
    """Join shapes typed with spaces: `a100 x 4`, `a100 x4`, `4 x a100` become one word each."""
    merged: list[str] = []
    for word in words:
        if merged and _glues(merged[-1].lower(), word):
            merged[-1] += word
        else:
            merged.append(word)
    return merged


def _count(digits: str, limits: Limits, how: str) -> int:
    count = int(digits) if len(digits.lstrip("+-")) <= 6 else limits.max_gpus + 1
    if not 1 <= count <= limits.max_gpus:
        raise fail(f"A GPU count of {shown(digits)} is out of range: ask for 1 to {limits.max_gpus}", how)
    return count


def _splits(word: str) -> list[tuple[str, str]]:
    found = [_SUFFIX.match(word), _PREFIX.match(word)]
    return [(m["gpu"], m["n"]) for m in found if m]


def _unknown_gpu(word: str, how: str) -> Exception:
    if _COUNT_ONLY.match(word):
        what = "a number without a unit or GPU (a duration needs a unit: 6h; a count goes with a GPU: a100x6)"
        return fail(f"`{shown(word)}` is {what}", how)
    suffix = _SUFFIX.match(word)
    name = suffix["gpu"] if suffix and len(suffix["n"].lstrip("+-")) <= 4 else word
    return fail(f"Unknown GPU `{shown(name)}`", how, _guess_gpu(name))


def _guess_gpu(name: str) -> str | None:
    """Typed letters that look like digits first (`a10o` → a100), then the catalog's closest name."""
    return resolve_gpu(name.translate(_DIGIT_LOOKALIKES)) or suggest_gpu(name)


def parse_shape(word: str, limits: Limits, how: str = "/gpu book a100x4 6h") -> Shape:
    """One GPU shape (`a100x4`, `4xa100`, `a100:4`, `h100`) checked against the catalog and count limit."""
    lowered = word.lower()
    key = resolve_gpu(lowered)
    if key:
        return Shape(key, 1)
    for gpu, digits in _splits(lowered):
        key = resolve_gpu(gpu)
        if key:
            return Shape(key, _count(digits, limits, how))
    raise _unknown_gpu(lowered, how)


def looks_like_duration(word: str) -> bool:
    """Whether a word is written like a duration (`6h`, `-2h`, `2h30m`), right or wrong in value."""
    return bool(_DURATION.match(word.lower().lstrip("+-")))


def parse_span(word: str, longest: timedelta, how: str) -> timedelta:
    """A duration word that must be more than zero and at most `longest`."""
    lowered = word.lower()
    body = lowered.lstrip("+-")
    limit = f"more than 0 and at most {format_duration(longest)}"
    if not _DURATION.match(body):
        raise fail(f"`{shown(word)}` is not a duration (use a unit: 90m, 6h, 1d, 2h30m)", how)
    try:
        value = parse_duration(body)
    except (ValueError, OverflowError):
        value = longest + timedelta(seconds=1)
    if lowered.startswith("-") or value <= timedelta(0):
        raise fail(f"A duration must be {limit}, not `{shown(word)}`", how)
    if value > longest:
        raise fail(f"`{shown(word)}` is too long: a duration must be {limit}", how)
    return value


def parse_id(word: str, how: str) -> int:
    """A positive id written `12` or `#12`."""
    found = _ID.match(word.strip())
    if not found or int(found[1]) == 0:
        raise fail(f"`{shown(word)}` is not an id (a positive number like 12 or #12)", how)
    return int(found[1])


def _decimal(word: str) -> Decimal | None:
    text = word.strip().removeprefix("$").removesuffix("/h").removesuffix("/hr")
    return Decimal(text) if _NUMBER.match(text) else None


def parse_price(word: str) -> Decimal:
    """A price per GPU-hour greater than 0 (`2.5`, `$2.50`, `2.5/h`)."""
    value = _decimal(word)
    how = "/gpu book a100x4 6h --max-price 2.50"
    if value is None:
        raise fail(f"The price `{shown(word)}` is not a number (per GPU-hour, like 2.50)", how)
    if value <= 0:
        raise fail(f"The price must be more than 0, not `{shown(word)}`", how)
    return value


def parse_amount(word: str, how: str) -> Decimal:
    """A money amount of 0 or more (`5000`, `$250.50`)."""
    value = _decimal(word)
    if value is None:
        raise fail(f"The amount `{shown(word)}` is not a number", how)
    return value


def _provider_key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def parse_provider(word: str, limits: Limits, how: str) -> str:
    """A provider name: the configured spelling when `limits.providers` is set, else the word lowercased."""
    if not word.strip():
        raise fail("A provider name is missing", how)
    if not limits.providers:
        return word.strip().lower()
    known = {_provider_key(p): p for p in limits.providers}
    if _provider_key(word) in known:
        return known[_provider_key(word)]
    guess = closest(_provider_key(word), list(known))
    names = ", ".join(limits.providers)
    raise fail(f"Unknown provider `{shown(word)}` (known: {names})", how, known[guess] if guess else None)


def parse_cuda(word: str, how: str) -> str:
    """A CUDA version floor written `12.1` (also `cuda12.1`), returned as `12.1`."""
    try:
        major, minor = cuda_version(word)
    except ValueError as exc:
        raise fail(f"`{shown(word)}` is not {exc}", how) from None
    return f"{major}.{minor}"


def parse_image(word: str, how: str) -> str:
    """An image name: a container image (`pytorch/pytorch:2.3.0-cuda12.1`), an AutoDL image uuid or an AMI id."""
    if not _IMAGE.match(word):
        raise fail(f"`{shown(word)}` is not an image name (letters, digits and . _ / : @ + -, up to 200)", how)
    return word
