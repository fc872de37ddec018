"""The `/gpu` grammar: a pure parser from the text after `/gpu` to a Command.

`parse(text, now=..., user_tz=..., limits=...)` returns one of the command dataclasses below or raises
`ParseError` (never anything else) whose message says what was wrong and shows the right form; its
`suggestion` is the closest valid word (`book`, `a100`, `--spot`, a provider name) or None.

Decisions worth knowing:
- A naive `now` is taken as UTC. `--provider` (and `admin provider`) match the configured names ignoring case
  and `-`/`_` and return the configured spelling; with no providers configured any name is accepted, lowercased.
  `--region`, `--project` and `--note` are kept as typed.
- Text longer than MAX_TEXT is refused. Control and format characters (zero-width, bidi marks) are dropped,
  tabs and newlines become spaces; then NFKC folds fullwidth letters and non-breaking spaces, smart quotes
  become `"`, en/em dashes become `--` and `×` becomes `x`. An unclosed quote runs to the end of the text.
- `/gpu`, `/gpu help`, `/gpu ?` and `--help`/`-h` anywhere give Help (with the command as topic if known).
- A shape without a subcommand (`/gpu a100x4 6h`) is refused with the suggestion `book`: booking spends money.
- `--note` takes one quoted value, or else every word up to the next `--option`.
- `--at` reads the forms of `grammar_moments` (`09:00`, `9am`, `tomorrow 09:00`, `mon 09:00`, `next monday 9am`,
  `明天 9点`, `今晚8点`, `下周一 09:00`, `2026-12-01T09:00`…) in the user's zone, unquoted words included, and
  hands other text to `moments` when given; it must be in the future and at most AT_HORIZON ahead.
- `--night` starts at the next night_start in team time; when it is night already start_at is None
  (book now) and `night` is still True. `--at` with `--night` is refused.
- `watch h100x8 2h` watches for 8 H100 that can start for 2 h (the duration Book now books, within
  max_duration; `--for 2h` is the same, as `for 2h` is everywhere); how long the watch lives is `--within 6h`
  or `--until 18:00`, at most WATCH_MAX. `extend`'s duration is checked against max_duration on its own (the
  engine checks the total).
- Everyday spellings: `4卡 a100`, `a100 四张`, `a100 80g x2`, `6h30`, `half an hour`, `半小时`, `一个半小时`
  (grammar_spoken); `/gpu cost yesterday`, `上周`, `本月` (domain.periods). A suggestion keeps the user's shape
  (count and memory) and numbers, and never proposes a value over the limits.
- `admin budget set` scopes: `team`, `user:U123` and bare Slack ids (`U…` with a digit) become `user:U123`
  (the bot turns Slack's @mentions into bare ids first); `project:NAME` and any other bare word become
  `project:NAME`.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

from gpubot.domain.catalog import closest
from gpubot.domain.errors import ParseError
from gpubot.domain.grammar_commands import (
    Handler,
    no_args,
    parse_admin,
    parse_cancel,
    parse_cost,
    parse_extend,
    parse_lang,
    parse_release,
    parse_status,
    parse_unwatch,
)
from gpubot.domain.grammar_requests import WATCH_MAX, Context, parse_book, parse_quote, parse_watch
from gpubot.domain.grammar_text import EXAMPLES, Token, clean_text, fail, shown, tokenize
from gpubot.domain.grammar_time import AT_HORIZON, MomentReader
from gpubot.domain.grammar_types import (
    MAX_TEXT,
    AdminBudgetSet,
    AdminProvider,
    AdminRelease,
    Book,
    Budget,
    Cancel,
    Command,
    Cost,
    Extend,
    Help,
    Lang,
    Limits,
    OpenBookModal,
    Prices,
    Queue,
    Quote,
    Release,
    Shape,
    Status,
    Unwatch,
    Watch,
    Watches,
)
from gpubot.domain.grammar_values import parse_shape

__all__ = [
    "AT_HORIZON",
    "MAX_TEXT",
    "SUBCOMMANDS",
    "WATCH_MAX",
    "AdminBudgetSet",
    "AdminProvider",
    "AdminRelease",
    "Book",
    "Budget",
    "Cancel",
    "Command",
    "Cost",
    "Extend",
    "Help",
    "Lang",
    "Limits",
    "MomentReader",
    "OpenBookModal",
    "Prices",
    "Queue",
    "Quote",
    "Release",
    "Shape",
    "Status",
    "Unwatch",
    "Watch",
    "Watches",
    "parse",
]

_HANDLERS: dict[str, Handler] = {
    "book": parse_book,
    "quote": parse_quote,
    "status": parse_status,
    "ls": parse_status,
    "queue": no_args("queue", Queue()),
    "cancel": parse_cancel,
    "release": parse_release,
    "extend": parse_extend,
    "prices": no_args("prices", Prices()),
    "cost": parse_cost,
    "budget": no_args("budget", Budget()),
    "admin": parse_admin,
    "watch": parse_watch,
    "watches": no_args("watches", Watches()),
    "unwatch": parse_unwatch,
    "lang": parse_lang,
    "language": parse_lang,
}
_HELP_WORDS = ("help", "?", "--help", "-h")
SUBCOMMANDS: tuple[str, ...] = (*_HANDLERS, "help")


def _help(head: str, rest: list[Token]) -> Help | None:
    if head in _HELP_WORDS:
        topic = rest[0].text.lower().lstrip("-") if rest else None
        return Help(topic or None)
    if any(t.is_option and t.text.lower() in ("--help", "-h") for t in rest):
        return Help(head if head in _HANDLERS else None)
    return None


def _is_shape(word: str) -> bool:
    try:
        parse_shape(word, Limits(max_gpus=10**6))
    except ParseError:
        return False
    return True


def _unknown(head: str) -> Exception:
    if not head:
        return fail("Start with a command such as `book` or `status`", EXAMPLES["book"])
    if _is_shape(head):
        return fail("`{shape}` needs a command in front", EXAMPLES["book"], "book", shape=shown(head))
    guess = closest(head, SUBCOMMANDS)
    how = EXAMPLES.get(guess or "", "/gpu help")
    return fail("Unknown command `{command}`", how, guess, command=shown(head))


def parse(text: str, *, now: datetime, user_tz: tzinfo = UTC, limits: Limits = Limits(),
          moments: MomentReader | None = None) -> Command:
    """Parse the text after `/gpu` into a Command; raise ParseError showing the right form when it cannot.
    `moments` reads `--at` / `--until` text the grammar's own forms do not cover (the bot's dateparser)."""
    tokens = tokenize(clean_text(text))
    if not tokens:
        return Help(None)
    head, rest = tokens[0].text.lower(), tokens[1:]
    helped = _help(head, rest)
    if helped is not None:
        return helped
    handler = _HANDLERS.get(head)
    if handler is None:
        raise _unknown(head)
    aware = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    return handler(rest, Context(now=aware, user_tz=user_tz, limits=limits, moments=moments))
