"""Values inside `/gpu` commands: GPU shapes, durations, ids, prices and provider names."""

from __future__ import annotations

import re
from decimal import Decimal

from gpubot.domain.catalog import closest, resolve_gpu, suggest_gpu
from gpubot.domain.cuda import cuda_version
from gpubot.domain.durations import span
from gpubot.domain.grammar_durations import looks_like_duration, parse_span, unit_readings
from gpubot.domain.grammar_spoken import CARD_WORDS, card_count
from gpubot.domain.grammar_text import N_, fail, shown
from gpubot.domain.grammar_types import Limits, Shape

__all__ = [
    "COUNT_ONLY",
    "PROJECT_RULE",
    "bare_number_error",
    "looks_like_duration",
    "merge_shape_words",
    "parse_amount",
    "parse_cuda",
    "parse_id",
    "parse_image",
    "parse_price",
    "parse_project",
    "parse_provider",
    "parse_shape",
    "parse_span",
    "shape_hint",
]

_SEPARATORS = ("x", ":", "*")
_SUFFIX = re.compile(r"^(?P<gpu>.+)[x:*](?P<n>[+-]?[0-9]+)$")
_PREFIX = re.compile(r"^(?P<n>[+-]?[0-9]+)[x:*](?P<gpu>.+)$")
COUNT_ONLY = re.compile(r"^[+-]?[0-9]+$")
_COUNT_SUFFIX = re.compile(r"^[x:*][+-]?[0-9]+$")
_NUMBER = re.compile(r"^(?:[0-9]{1,12}(?:\.[0-9]{1,6})?|\.[0-9]{1,6})$")
_MEMORY = re.compile(r"^(?P<gb>[0-9]{2,3})gb?(?P<count>[x:*][+-]?[0-9]+)?$")  # `80g`, `80gb`, `80gx2`
_CARDS_THEN_GPU = re.compile(r"^(?P<n>[0-9]{1,6}|[零一二两兩三四五六七八九十]{1,3})"
                             r"(?:张卡|块卡|張卡|塊卡|张|張|块|塊|卡)(?P<gpu>.+)$")
_DIGIT_LOOKALIKES = str.maketrans({"o": "0", "l": "1", "i": "1"})
_ID = re.compile(r"^#?([0-9]{1,12})$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,199}$")
PROJECT_RULE = "1 to 40 lowercase letters, digits, `.`, `_` or `-`, starting with a letter or digit"
_PROJECT = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")


def _glues(prev: str, word: str) -> bool:
    if prev.lower() == "or" or word.lower() == "or":
        return False
    if COUNT_ONLY.match(prev) and not prev.startswith(("+", "-")) and resolve_gpu(word):
        return True  # `4 a100`
    return word.lower() in _SEPARATORS or bool(_COUNT_SUFFIX.match(word.lower())) or prev.endswith(
        _SEPARATORS
    )


def _is_gpu_before(words: list[str]) -> bool:
    """Whether the words so far end in a GPU (`a100`, or `a100` `80g`)."""
    if words and _MEMORY.match(words[-1].lower()):
        words = words[:-1]
    return bool(words) and bool(resolve_gpu(words[-1]))


def _cards(words: list[str]) -> list[str]:
    """Chinese GPU counts as the `x` forms: `4卡 a100` → `4x a100`, `a100 四张` → `a100 x4`, `4卡a100` →
    `4xa100`, `4 卡` → `4卡` (a count word beside no GPU is left for the shape's refusal)."""
    out: list[str] = []
    for word in words:
        if out and COUNT_ONLY.match(out[-1]) and word in CARD_WORDS:
            out[-1] += word  # `4 卡`
            continue
        out.append(word)
    return [_card_as_x(out, i) for i in range(len(out))]


def _card_as_x(words: list[str], i: int) -> str:
    word, count = words[i], card_count(words[i])
    glued = _CARDS_THEN_GPU.match(word)
    if count is not None and _is_gpu_before(words[:i]):
        return f"x{count}"
    if count is not None and i + 1 < len(words) and resolve_gpu(words[i + 1]):
        return f"{count}x"
    if glued and (glued_count := card_count(word[: glued.start("gpu")])) is not None:
        return f"{glued_count}x{glued['gpu']}"
    return word


def _with_memory(prev: str, word: str) -> str | None:
    """A GPU followed by its memory (`a100` `80g` → `a100-80g`, `a100x2` `80gb` → `a100-80gx2`), or None."""
    memory = _MEMORY.match(word.lower())
    if not memory or prev.lower() == "or":
        return None
    suffix = _SUFFIX.match(prev)
    gpu, count = (suffix["gpu"], "x" + suffix["n"]) if suffix and resolve_gpu(suffix["gpu"]) else (prev, "")
    prefix = _PREFIX.match(gpu)
    if prefix and resolve_gpu(prefix["gpu"]):
        gpu, count = prefix["gpu"], "x" + prefix["n"]
    if not resolve_gpu(gpu):
        return None
    return f"{gpu}-{memory['gb']}g{count or ''}{memory['count'] or ''}"


def merge_shape_words(words: list[str]) -> list[str]:
    """Join shapes typed with spaces: `a100 x 4`, `a100 x4`, `4 x a100`, `4 a100`, `a100 80g x2`, `4卡 a100`,
    `a100 4张` become one word each."""
    merged: list[str] = []
    for word in _cards(words):
        with_memory = _with_memory(merged[-1], word) if merged else None
        if with_memory:
            merged[-1] = with_memory
        elif merged and _glues(merged[-1].lower(), word):
            glue = "x" if COUNT_ONLY.match(merged[-1]) and resolve_gpu(word) else ""
            merged[-1] += glue + word
        else:
            merged.append(word)
    return merged


def _count(digits: str, limits: Limits, how: str) -> int:
    count = int(digits) if len(digits.lstrip("+-")) <= 6 else limits.max_gpus + 1
    if not 1 <= count <= limits.max_gpus:
        raise fail("A GPU count of {count} is out of range: ask for 1 to {most}", how, count=shown(digits),
                   most=limits.max_gpus)
    return count


def _splits(word: str) -> list[tuple[str, str]]:
    found = [_SUFFIX.match(word), _PREFIX.match(word)]
    return [(m["gpu"], m["n"]) for m in found if m]


def bare_number_error(word: str, gpu: str, how: str, limits: Limits) -> Exception:
    """A number with neither a unit nor a GPU, with each reading the limits allow spelled in the user's own
    number: hours (else minutes) when within `max_duration`, a GPU count when within `max_gpus`."""
    shown_word = shown(word)
    durations = unit_readings(word, limits.max_duration, "hm")
    fits_gpus = len(word.lstrip("+-")) <= 6 and 1 <= int(word) <= limits.max_gpus
    values = {"word": shown_word, "shape": f"{gpu}x{shown_word}"}
    reading = durations[0][-1] if durations else None
    if reading and fits_gpus:
        return fail(_BARE[reading, True], how, **values)
    if reading:
        return fail(_BARE[reading, False], how, **values)
    if fits_gpus:
        return fail("`{word}` has no unit: for {word} GPUs write `{shape}`", how, **values)
    return fail("`{word}` has no unit, and fits neither as a duration (more than 0, at most {longest}) nor as a "
                "GPU count (1 to {most})", how, word=shown_word, longest=span(limits.max_duration),
                most=limits.max_gpus)


_BARE = {  # (unit that fits, whether a GPU count fits too) → template
    ("h", True): N_("`{word}` has no unit: for {word} hours write `{word}h`, for {word} GPUs write `{shape}`"),
    ("m", True): N_("`{word}` has no unit: for {word} minutes write `{word}m`, for {word} GPUs write `{shape}`"),
    ("h", False): N_("`{word}` has no unit: for {word} hours write `{word}h`"),
    ("m", False): N_("`{word}` has no unit: for {word} minutes write `{word}m`"),
}


def _unknown_gpu(word: str, how: str, limits: Limits) -> Exception:
    if COUNT_ONLY.match(word):
        return bare_number_error(word, "a100", how, limits)
    count = card_count(word)
    if count is not None:
        return fail("`{word}` says how many GPUs but not which: for {count} A100s write `a100x{count}`", how,
                    word=shown(word), count=count)
    suffix = _SUFFIX.match(word)
    name = suffix["gpu"] if suffix and len(suffix["n"].lstrip("+-")) <= 4 else word
    return fail("Unknown GPU `{name}`", how, _guess_gpu(name), name=shown(name))


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
    raise _unknown_gpu(lowered, how, limits)


def shape_hint(word: str, limits: Limits) -> tuple[str, int] | None:
    """The user's shape as an example shows it, (`a100`, 4), with the GPU guessed and the count brought within
    the limit when they are wrong (`a10ox40` → (`a100`, 16)); None when the word is no shape."""
    lowered = word.lower()
    if resolve_gpu(lowered):
        return resolve_gpu(lowered), 1
    for gpu, digits in _splits(lowered):
        key = resolve_gpu(gpu) or (_guess_gpu(gpu) if gpu.isascii() and any(c.isdigit() for c in gpu) else None)
        if key:
            count = int(digits) if len(digits.lstrip("+-")) <= 6 else limits.max_gpus
            return key, min(max(count, 1), limits.max_gpus)
    return None


def parse_id(word: str, how: str) -> int:
    """A positive id written `12` or `#12`."""
    found = _ID.match(word.strip())
    if not found or int(found[1]) == 0:
        raise fail("`{word}` is not an id (a positive number like 12 or #12)", how, word=shown(word))
    return int(found[1])


def _decimal(word: str) -> Decimal | None:
    text = word.strip().removeprefix("$").removesuffix("/h").removesuffix("/hr")
    return Decimal(text) if _NUMBER.match(text) else None


def parse_price(word: str) -> Decimal:
    """A price per GPU-hour greater than 0 (`2.5`, `$2.50`, `2.5/h`)."""
    value = _decimal(word)
    how = "/gpu book a100x4 6h --max-price 2.50"
    if value is None:
        raise fail("The price `{word}` is not a number (per GPU-hour, like 2.50)", how, word=shown(word))
    if value <= 0:
        raise fail("The price must be more than 0, not `{word}`", how, word=shown(word))
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


def parse_project(word: str, how: str) -> str:
    """A project name, lowercased: `llm`, `vision-2026`; anything else is refused with the rule."""
    name = word.strip().lower()
    if not _PROJECT.match(name):
        raise fail(f"`{shown(word)}` is not a project name: use {PROJECT_RULE}", how)
    return name


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
