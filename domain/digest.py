"""The daily digest as plain data, and its text. The engine gathers the figures; this only arranges them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from gpubot.domain.budget import percent
from gpubot.domain.costing import CostCheck, GroupTotal
from gpubot.domain.money import format_money
from gpubot.domain.report_text import cost_table, hours

__all__ = ["Digest", "WasteLine", "digest_plain", "digest_text", "is_quiet"]


@dataclass(frozen=True)
class WasteLine:
    """Idle GPU time of one booking yesterday."""

    booking_id: int
    owner: str
    idle_gpu_hours: Decimal
    waste: Decimal


@dataclass(frozen=True)
class Digest:
    """Everything the daily digest says about `day` (team time zone)."""

    day: date
    currency: str
    by: Mapping[str, Sequence[GroupTotal]]  # user / project / provider → rows of yesterday
    total: GroupTotal
    month_label: str
    month_spent: Decimal
    month_limit: Decimal
    month_forecast: Decimal
    daily_spend: Sequence[tuple[date, Decimal]]  # this month, day by day up to `day`
    top_waste: Sequence[WasteLine] = ()
    active: Sequence[str] = ()
    queue: Sequence[str] = ()
    failed: Sequence[str] = ()
    alerts: Sequence[str] = ()
    cost_checks: Sequence[CostCheck] = field(default_factory=tuple)


def is_quiet(digest: Digest) -> bool:
    """True when nothing happened: no spend, nothing running or waiting, no failure, alert or disagreement."""
    return not (digest.total.spend or digest.total.gpu_hours or digest.active or digest.queue or digest.failed
                or digest.alerts or digest.cost_checks)


@dataclass(frozen=True)
class _Part:
    """One paragraph of the digest: an optional title, lines (bulleted when `bullets`) or a fixed-width table."""

    title: str | None
    lines: Sequence[str] = ()
    table: str | None = None
    bullets: bool = False


def _parts(digest: Digest) -> list[_Part]:
    money = lambda amount: format_money(amount, digest.currency)  # noqa: E731
    parts = [_Part(f"Digest for {digest.day:%Y-%m-%d}", [f"{money(digest.total.spend)} spent, "
                   f"{hours(digest.total.gpu_hours)} GPU-hours, {money(digest.total.waste)} idle waste."]),
             _Part(f"Month to date ({digest.month_label})", [_month_line(digest, money)])]
    parts += [_Part(f"By {by}", table=cost_table(rows, digest.total, by, digest.currency))
              for by, rows in digest.by.items() if rows]
    lists = [("Top idle waste", [f"#{w.booking_id} <@{w.owner}>: {hours(w.idle_gpu_hours)} idle GPU-h, "
                                 f"{money(w.waste)}" for w in digest.top_waste]),
             ("Active bookings", digest.active), ("Queue", digest.queue), ("Failed acquisitions", digest.failed),
             ("Alerts", digest.alerts),
             ("Provider cost disagreements (over 2 %)", [_check_line(c) for c in digest.cost_checks])]
    return parts + [_Part(title, lines, bullets=True) for title, lines in lists if lines]


def digest_text(digest: Digest) -> str:
    """The digest as Slack mrkdwn, one paragraph per part (the bot posts each as its own section); a quiet day
    is one line."""
    if is_quiet(digest):
        return f"📊 Digest for {digest.day:%Y-%m-%d}: no activity."
    paragraphs = []
    for i, part in enumerate(_parts(digest)):
        if i == 0:
            paragraphs.append(f"📊 *{part.title}*: {part.lines[0]}")
        elif part.table is not None:
            paragraphs.append(f"*{part.title}*\n```{part.table}```")
        elif part.bullets:
            paragraphs.append(f"*{part.title}*\n" + "\n".join(f"• {line}" for line in part.lines))
        else:
            paragraphs.append(f"*{part.title}*: {part.lines[0]}")
    return "\n\n".join(paragraphs)


_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")


def digest_plain(digest: Digest) -> str:
    """The digest as plain text for a terminal: no Slack markup, tables indented, people as @U123."""
    if is_quiet(digest):
        return f"Digest for {digest.day:%Y-%m-%d}: no activity."
    paragraphs = []
    for part in _parts(digest):
        if part.table is not None:
            body = "\n".join(f"  {row}" for row in part.table.split("\n"))
            paragraphs.append(f"{part.title}\n{body}")
        elif part.bullets:
            paragraphs.append(f"{part.title}\n" + "\n".join(f"  - {line}" for line in part.lines))
        else:
            paragraphs.append(f"{part.title}: {part.lines[0]}")
    return _MENTION.sub(r"@\1", "\n\n".join(paragraphs))


def _month_line(digest: Digest, money) -> str:
    return (f"{money(digest.month_spent)} of {money(digest.month_limit)} "
            f"({percent(digest.month_spent, digest.month_limit)} %); month-end forecast "
            f"{money(digest.month_forecast)} ({percent(digest.month_forecast, digest.month_limit)} %).")


def _check_line(check: CostCheck) -> str:
    what = "cost so far" if check.basis == "total" else "hourly rate"
    return (f"#{check.booking_id} on {check.provider}: {what} reported {format_money(check.theirs, check.currency)}, "
            f"ours {format_money(check.ours, check.currency)} ({check.diff_percent:.1f} % apart)")
