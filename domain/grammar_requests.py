"""The commands that ask for GPUs: `book`, `quote` and `watch`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from gpubot.domain.durations import span
from gpubot.domain.grammar_durations import drop_fillers, duration_hint, join_duration_words
from gpubot.domain.grammar_options import Options, split_options
from gpubot.domain.grammar_text import Token, fail, shown
from gpubot.domain.grammar_time import MomentReader, resolve_at, resolve_night
from gpubot.domain.grammar_types import Book, Limits, OpenBookModal, Quote, Shape, Watch, Watches
from gpubot.domain.grammar_values import (
    COUNT_ONLY,
    bare_number_error,
    looks_like_duration,
    merge_shape_words,
    parse_cuda,
    parse_image,
    parse_price,
    parse_project,
    parse_provider,
    parse_shape,
    parse_span,
    shape_hint,
)

__all__ = ["BOOK_OPTIONS", "WATCH_MAX", "WATCH_OPTIONS", "Context", "parse_book", "parse_quote", "parse_request",
           "parse_watch"]

WATCH_MAX = timedelta(days=7)  # the longest a watch may run
_ALTERNATIVES = "/gpu book a100x4 or h100x2 6h"
WATCH_OPTIONS = ("provider", "for", "within", "until")
BOOK_OPTIONS = ("spot", "provider", "region", "max-price", "project", "at", "night", "note", "cuda", "image")


@dataclass(frozen=True)
class Context:
    """What parsing depends on besides the text: the moment, the user's zone and the team limits."""

    now: datetime
    user_tz: tzinfo
    limits: Limits
    moments: MomentReader | None = None  # the caller's fuller reader of `--at` / `--until` text


def _split_durations(words: list[str], how: str) -> tuple[list[str], str | None]:
    durations = [w for w in words if looks_like_duration(w)]
    if len(durations) > 1:
        given = ", ".join(f"`{shown(w)}`" for w in durations)
        raise fail(f"Give one duration, not {len(durations)} ({given})", how)
    return [w for w in words if not looks_like_duration(w)], (durations[0] if durations else None)


def _groups(words: list[str], how: str) -> list[list[str]]:
    groups: list[list[str]] = [[]]
    for word in words:
        if word.lower() == "or":
            groups.append([])
        else:
            groups[-1].append(word)
    if len(groups) > 1 and not all(groups):
        raise fail("`or` must stand between two GPU shapes", _ALTERNATIVES)
    if not groups[0]:
        raise fail("Which GPU? A GPU shape is missing", how)
    return groups


def _shape_group(group: list[str], limits: Limits, how: str) -> Shape:
    shapes = [parse_shape(word, limits, how) for word in group]
    if len(shapes) > 1:
        raise fail(f"Put `or` between alternatives, not `{shown(' '.join(group))}`", _ALTERNATIVES)
    return shapes[0]


def _shape_of(words: list[str], limits: Limits) -> tuple[str, int] | None:
    return next((hint for word in words if (hint := shape_hint(word, limits))), None)


def request_example(command: str, words: list[str], limits: Limits, longest: timedelta | None = None) -> str:
    """The right form of the user's request in their own shape and numbers, where they gave them."""
    gpu, count = _shape_of(words, limits) or ("a100", 4)
    shape = f"{gpu}x{count}" if count > 1 else gpu
    durations = [w for w in words if looks_like_duration(w)] + [w for w in words if COUNT_ONLY.match(w)]
    longest = longest or limits.max_duration
    duration = next((hint for word in durations if (hint := duration_hint(word, longest))), None)
    return f"/gpu {command} {shape} {duration or '6h'}"


def _refuse_bare_numbers(words: list[str], limits: Limits, how: str) -> None:
    bare = next((w for w in words if COUNT_ONLY.match(w) and not shape_hint(w, limits)), None)
    if bare is not None:
        gpu, _count = _shape_of(words, limits) or ("a100", 4)
        raise bare_number_error(bare, gpu, how, limits)


def parse_request(tokens: list[Token], ctx: Context, command: str, also: tuple[str, ...] = (),
                  longest: timedelta | None = None) -> tuple[list[Shape], str | None, str]:
    """Shapes separated by `or`, at most one duration word (checked by the caller), and the right form of the
    request in the user's own numbers (for the caller's messages; `also` are option values it may quote)."""
    words = merge_shape_words(join_duration_words([t.text for t in tokens]))
    how = request_example(command, [*words, *also], ctx.limits, longest)
    words = drop_fillers(words, how)
    _refuse_bare_numbers(words, ctx.limits, how)
    words, duration = _split_durations(words, how)
    return [_shape_group(group, ctx.limits, how) for group in _groups(words, how)], duration, how


def _duration(word: str | None, ctx: Context, how: str) -> timedelta:
    if word is None:
        return ctx.limits.default_duration
    return parse_span(word, ctx.limits.max_duration, how)


def _schedule(options: Options, ctx: Context) -> tuple[datetime | None, bool]:
    if "at" in options and "night" in options:
        raise fail("Use `--at` or `--night`, not both", "/gpu book a100x4 6h --night")
    if "night" in options:
        return resolve_night(ctx.now, ctx.limits), True
    if "at" in options:
        return resolve_at(str(options["at"]), ctx.now, ctx.user_tz, ctx.moments), False
    return None, False


def _text(options: Options, name: str) -> str | None:
    value = options.get(name)
    return str(value) if value is not None else None


def parse_book(args: list[Token], ctx: Context) -> Book | OpenBookModal:
    """`/gpu book SHAPE [or SHAPE...] [DURATION] [options]`; no arguments opens the booking form."""
    if not args:
        return OpenBookModal()
    positional, options = split_options(args, BOOK_OPTIONS, "book")
    shapes, duration, how = parse_request(positional, ctx, "book")
    start_at, night = _schedule(options, ctx)
    provider = _text(options, "provider")
    price, project = _text(options, "max-price"), _text(options, "project")
    cuda, image = _text(options, "cuda"), _text(options, "image")
    return Book(
        shape=shapes[0],
        duration=_duration(duration, ctx, how),
        alternatives=tuple(shapes[1:]),
        spot=bool(options.get("spot")),
        provider=parse_provider(provider, ctx.limits, f"{how} --provider NAME") if provider else None,
        region=_text(options, "region"),
        max_price=parse_price(price) if price else None,
        project=parse_project(project, f"{how} --project llm") if project else None,
        start_at=start_at,
        night=night,
        note=_text(options, "note"),
        cuda=parse_cuda(cuda, f"{how} --cuda 12.1") if cuda else None,
        image=parse_image(image, f"{how} --image NAME") if image else None,
    )


def parse_quote(args: list[Token], ctx: Context) -> Quote:
    """`/gpu quote SHAPE [or SHAPE...] [DURATION] [--cuda 12.1]`."""
    positional, options = split_options(args, ("cuda",), "quote")
    shapes, duration, how = parse_request(positional, ctx, "quote")
    cuda = _text(options, "cuda")
    return Quote(shapes[0], _duration(duration, ctx, how), tuple(shapes[1:]),
                 parse_cuda(cuda, f"{how} --cuda 12.1") if cuda else None)


def _watch_end(options: Options, ctx: Context, how: str) -> tuple[timedelta | None, datetime | None]:
    """How long the watch lives: `--within 6h` or `--until 18:00` (at most WATCH_MAX), else None (the policy's)."""
    if "within" in options and "until" in options:
        raise fail("Use `--within` or `--until`, not both", f"{how} --within 6h")
    if "within" in options:
        within = str(options["within"])
        return parse_span(within, WATCH_MAX, f"{how} --within {duration_hint(within, WATCH_MAX) or '6h'}"), None
    if "until" not in options:
        return None, None
    until = resolve_at(str(options["until"]), ctx.now, ctx.user_tz, ctx.moments)
    if until - ctx.now > WATCH_MAX:
        raise fail("A watch lasts at most {most}; `--until {until}` is further", f"{how} --within 6h",
                   most=span(WATCH_MAX), until=shown(str(options["until"])))
    return None, until


def parse_watch(args: list[Token], ctx: Context) -> Watch | Watches:
    """`/gpu watch SHAPE [DURATION] [--within 6h | --until 18:00] [--provider NAME]`: tell me when SHAPE can
    start for DURATION (the default booking length when left out; `--for 2h` says it too); alone, list watches."""
    if not args:
        return Watches()
    positional, options = split_options(args, WATCH_OPTIONS, "watch")
    shapes, duration, how = parse_request(positional, ctx, "watch", (_text(options, "for") or "",))
    if len(shapes) > 1:
        raise fail("Watch one GPU shape at a time", how)
    if duration and "for" in options:
        raise fail("Give the duration once, either as a word or with `--for`", how)
    within, until = _watch_end(options, ctx, how)
    provider = _text(options, "provider")
    return Watch(
        shape=shapes[0],
        provider=parse_provider(provider, ctx.limits, f"{how} --provider NAME") if provider else None,
        duration=_duration(_text(options, "for") or duration, ctx, how),
        within=within,
        until=until,
    )
