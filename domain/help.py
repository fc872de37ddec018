"""Usage text for `/gpu help [topic]`: Slack mrkdwn that still reads well in a terminal.

Every sentence is marked with `N_` for the message catalogs (bot/locale); `help_text` takes the reader's
`translate` (a gettext) and applies it where the text is put together."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["TOPICS", "help_text"]


def N_(message: str) -> str:
    """Mark a message for the catalogs; it is translated where help_text puts the text together."""
    return message

_GENERAL: tuple[tuple[str, str], ...] = (
    ("/gpu book a100x4 6h", N_("book 4 A100s for 6 hours (`/gpu book` alone opens a form)")),
    ("/gpu quote a100x4 6h", N_("what it would cost, without booking")),
    ("/gpu status", N_("your bookings (`/gpu status all` or `/gpu ls all` for everyone's)")),
    ("/gpu queue", N_("bookings waiting for capacity")),
    ("/gpu cancel 12", N_("cancel a booking that has not started")),
    ("/gpu release 12", N_("give running GPUs back now")),
    ("/gpu extend 12 2h", N_("keep a booking 2 hours longer")),
    ("/gpu prices", N_("current prices per GPU-hour")),
    ("/gpu cost month by user", N_("what the team spent (today, yesterday, week, last week, month, last month or "
                                    "2026-03)")),
    ("/gpu budget", N_("budgets and how much is left")),
    ("/gpu watch h100x8 2h", N_("tell me when 8 H100s can start for 2 hours (`/gpu watches`, `/gpu unwatch 3`)")),
    ("/gpu lang zh", N_("answer me in 简体中文 (`/gpu lang en` for English, `/gpu language` works too)")),
    ("/gpu admin release 12", N_("admins: release, pause providers, set budgets (`/gpu help admin`)")),
    ("/gpu help book", N_("every option of a command")),
)

_SHAPES = N_(
    "*GPU shapes*: `a100x4`, `4xa100`, `4 a100`, `a100 x4`, `a100:4`, `4卡 a100`, `a100 四张`, `h100` (one GPU), "
    "`a100-80g x2`, `a100 80g x2`, `rtx4090x2`.\n"
    "*Durations*: `6h`, `6hrs`, `6 hours`, `90 min`, `1.5h`, `2h30m`, `6h30`, `half an hour`, `1 day`, `for 6h`, "
    "`6小时`, `半小时`, `一个半小时`, `30分钟`, `1天` – more than 0 and within the team's maximum; each unit once "
    "(`6h6h` is refused)."
)

_BOOK = N_("""*/gpu book* – book GPUs
`/gpu book SHAPE [or SHAPE ...] [DURATION] [options]`
{shapes}
Without a duration the team default applies (4h unless your policy says otherwise).
*Alternatives*: `/gpu book a100x4 or h100x2 or rtx4090x8 6h` – whichever is free first, the cheapest of those free.
*Options* (write `--opt value` or `--opt=value`):
• `--spot` – cheaper interruptible machines: `/gpu book a100x4 6h --spot`
• `--provider NAME` – only this cloud: `/gpu book a100x4 6h --provider lambda`
• `--region R` – only this region: `/gpu book a100x4 6h --region us-east-1`
• `--max-price P` – highest price per GPU-hour: `/gpu book a100x4 6h --max-price 2.50`
• `--project NAME` – charge a project: `/gpu book a100x4 6h --project llm` (1–40 lowercase letters, digits,
  `.`, `_`, `-`)
• `--at TIME` – start later, in your time zone: `/gpu book a100x4 6h --at tomorrow 09:00`; also
  `--at 09:00` (the next 09:00), `--at 9am`, `--at mon 09:00`, `--at next monday 9am`, `--at 明天 9点`,
  `--at 后天 09:00`, `--at 今晚8点`, `--at 周五下午3点`, `--at 下周一 09:00`, `--at 2026-12-01 09:00`
• `--night` – start at the next off-peak window (now, if it is night already): `/gpu book a100x4 8h --night`
• `--note TEXT` – a note for the team: `/gpu book a100x4 6h --note "llama fine-tune"`
• `--cuda V` – machines that run at least this CUDA: `/gpu book a100x4 6h --cuda 12.1`
• `--image NAME` – the image to boot (container image, AutoDL image uuid or AMI):
  `/gpu book a100x4 6h --image pytorch/pytorch:2.3.0-cuda12.1`
`--at` and `--night` cannot be used together. `/gpu book` with nothing after it opens a form.""")

_TOPICS: dict[str, str] = {
    "book": _BOOK,
    "quote": N_("*/gpu quote* – price a booking without making it, with the expected wait at this hour\n"
                "`/gpu quote a100x4 or h100x2 6h` (`--cuda 12.1` leaves out machines with an older CUDA)\n{shapes}"),
    "status": N_("*/gpu status* – your bookings; `/gpu status all` shows everyone's. `ls` works too."),
    "queue": N_("*/gpu queue* – bookings waiting for capacity, in the order they will be served."),
    "cancel": N_("*/gpu cancel ID* – cancel a booking that has not started: `/gpu cancel 12` or `/gpu cancel #12`."),
    "release": N_("*/gpu release ID* – give running GPUs back now and stop paying: `/gpu release 12`."),
    "extend": N_("*/gpu extend ID DURATION* – keep a booking longer: `/gpu extend 12 2h` (or `extend #12 by 2h`)."),
    "prices": N_("*/gpu prices* – current prices per GPU-hour across the configured providers."),
    "cost": N_(
        "*/gpu cost [PERIOD] [by GROUP]* – what was spent.\n"
        "PERIOD: `today`, `yesterday`, `week`, `last week`, `month` (default), `last month` or a month like "
        "`2026-03`; also 今天, 昨天, 本周, 上周, 本月, 上个月.\n"
        "GROUP: `user`, `project`, `provider` or `gpu`. Example: `/gpu cost 2026-03 by project`."
    ),
    "budget": N_("*/gpu budget* – the team, user and project budgets and how much of each is left."),
    "watch": N_(
        "*/gpu watch SHAPE [DURATION] [--within TIME | --until MOMENT] [--provider NAME]* – a DM when the shape "
        "can start for DURATION (the team's default length when left out).\n"
        "Example: `/gpu watch h100x8 2h` – tell me when 8 H100s can start for 2 hours (`--for 2h` says the same).\n"
        "The watch lives `--within 1d` from now or `--until fri 18:00` (at most 7 days; the team's default "
        "otherwise).\n"
        "You are told once, with a Book now button that books exactly that offer for DURATION; then the watch "
        "ends.\n"
        "`/gpu watch` alone (or `/gpu watches`) lists your watches; `/gpu unwatch 3` removes one."
    ),
    "lang": N_(
        "*/gpu lang zh|en|auto* – the language gpubot speaks to you: `/gpu lang zh` for 简体中文, `/gpu lang en` "
        "for English, `/gpu lang auto` to follow your Slack language again (without either, the team's language "
        "applies). `/gpu lang` alone says which one you get."
    ),
    "admin": N_(
        "*/gpu admin* – for team admins\n"
        "• `/gpu admin release 12` – release anyone's booking\n"
        "• `/gpu admin provider pause lambda` / `/gpu admin provider resume lambda`\n"
        "• `/gpu admin budget set team 5000`\n"
        "• `/gpu admin budget set user:U123ABC 500` (or `@person`, or a bare U-id)\n"
        "• `/gpu admin budget set project:llm 1500` (a bare word is taken as a project)"
    ),
    "help": N_("*/gpu help [topic]* – this help; topics: {topics}"),
}
_HELP_TOPICS = ("book", "quote", "status", "queue", "cancel", "release", "extend", "prices", "cost", "budget",
                "watch", "lang", "admin")
_ALIASES = {"language": "lang", "ls": "status", "watches": "watch", "unwatch": "watch", "options": "book",
            "shapes": "book"}
TOPICS: tuple[str, ...] = (*_TOPICS, *_ALIASES)


def _same(message: str) -> str:
    return message


def _general(translate: Callable[[str], str]) -> str:
    lines = [f"• `{usage}` – {translate(what)}" for usage, what in _GENERAL]
    return "*" + translate(N_("Book cloud GPUs with `/gpu`")) + "*\n" + "\n".join(lines)


def help_text(topic: str | None = None, translate: Callable[[str], str] = _same) -> str:
    """The general usage, or the detail of one topic, in the reader's language (`translate` is their gettext);
    an unknown topic gives the general usage and says so."""
    if not topic:
        return _general(translate)
    key = topic.strip().lower().lstrip("-")
    key = _ALIASES.get(key, key)
    if key in _TOPICS:
        topics = translate(N_(", ")).join(f"`{name}`" for name in _HELP_TOPICS)  # the words `/gpu help` takes
        return translate(_TOPICS[key]).replace("{shapes}", translate(_SHAPES)).replace("{topics}", topics)
    shown = topic.replace("`", "'")[:40]
    unknown = translate(N_("There is no help topic `{topic}`; try `/gpu help book`."))
    return _general(translate) + "\n" + unknown.replace("{topic}", shown)
