"""The daily digest (a DigestReady notice) worded in the reader's language: as Slack mrkdwn, one paragraph per
part with bold titles, fenced tables and people mentioned; or as plain text for a terminal, tables indented and
people as @U123. In mrkdwn every name the digest shows (projects, providers, failures, alerts) is escaped."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpubot.bot.i18n import ENGLISH, N_, Translator, duration_for, locale_of, money_for, month_for
from gpubot.bot.progress_lines import OUTCOMES, UNKNOWN_OUTCOME
from gpubot.bot.times import moment_for
from gpubot.bot.views import escape, state_name
from gpubot.domain.budget import percent
from gpubot.domain.costing import GroupTotal
from gpubot.domain.model import BookingState
from gpubot.domain.notices import AttemptsRow, BookingRow, CheckRow, DigestReady, GroupRow, WasteRow
from gpubot.domain.report_text import cost_table, hours

__all__ = ["digest_mrkdwn", "digest_plain"]


@dataclass(frozen=True)
class _Part:
    """One paragraph of the digest: a title, then lines (bulleted when `bullets`) or a fixed-width table."""

    title: str
    lines: Sequence[str] = ()
    table: str | None = None
    bullets: bool = False


@dataclass(frozen=True)
class _Style:
    """How a rendering shows user-supplied text and people."""

    text: Callable[[str], str]
    person: Callable[[str], str]


_MRKDWN = _Style(escape, lambda user: f"<@{escape(user)}>")
_PLAIN = _Style(str, lambda user: f"@{user}")


def digest_mrkdwn(digest: DigestReady, tr: Translator = ENGLISH) -> str:
    """The digest as Slack mrkdwn (the bot posts each paragraph as its own section); a quiet day is one line."""
    if digest.quiet:
        return "📊 " + _quiet(digest, tr, _MRKDWN)
    paragraphs = []
    for i, part in enumerate(_parts(digest, tr, _MRKDWN)):
        if i == 0:
            paragraphs.append("📊 " + _headed(f"*{part.title}*", part.lines[0], tr))
        elif part.table is not None:
            paragraphs.append(f"*{part.title}*\n```{part.table}```")
        elif part.bullets:
            paragraphs.append(f"*{part.title}*\n" + "\n".join(f"• {line}" for line in part.lines))
        else:
            paragraphs.append(_headed(f"*{part.title}*", part.lines[0], tr))
    return "\n\n".join(paragraphs)


def digest_plain(digest: DigestReady, tr: Translator = ENGLISH) -> str:
    """The digest as plain text for a terminal: no Slack markup, tables indented, people as @U123."""
    if digest.quiet:
        return _quiet(digest, tr, _PLAIN)
    paragraphs = []
    for part in _parts(digest, tr, _PLAIN):
        if part.table is not None:
            body = "\n".join(f"  {row}" for row in part.table.split("\n"))
            paragraphs.append(f"{part.title}\n{body}")
        elif part.bullets:
            paragraphs.append(f"{part.title}\n" + "\n".join(f"  - {line}" for line in part.lines))
        else:
            paragraphs.append(_headed(part.title, part.lines[0], tr))
    return "\n\n".join(paragraphs)


def _headed(title: str, text: str, tr: Translator) -> str:
    """`Title: text`, `标题：正文`: a one-line part, punctuated in the reader's language."""
    return tr.gettext("{title}: {text}").format(title=title, text=text)


def _quiet(digest: DigestReady, tr: Translator, style: _Style) -> str:
    return tr.gettext("Digest for {day}: no activity.").format(day=style.text(digest.period))


def _parts(digest: DigestReady, tr: Translator, style: _Style) -> list[_Part]:
    money = lambda amount: money_for(tr, amount, digest.currency)  # noqa: E731
    month = style.text(month_for(tr, digest.month))
    parts = [_Part(tr.gettext("Digest for {day}").format(day=style.text(digest.period)), [tr.gettext(
                 "{spent} spent, {gpu_hours} GPU-hours, {waste} idle waste.").format(
                 spent=money(digest.spent), gpu_hours=hours(digest.gpu_hours), waste=money(digest.waste))]),
             _Part(tr.gettext("Month to date ({month})").format(month=month), [tr.gettext(
                 "{spent} of {limit} ({percent} %); month-end forecast {forecast} ({forecast_percent} %).").format(
                 spent=money(digest.month_spent), limit=money(digest.month_limit),
                 percent=percent(digest.month_spent, digest.month_limit), forecast=money(digest.month_forecast),
                 forecast_percent=percent(digest.month_forecast, digest.month_limit))])]
    tables = [(tr.gettext("By user"), "user", digest.by_user), (tr.gettext("By project"), "project",
              digest.by_project), (tr.gettext("By provider"), "provider", digest.by_provider)]
    parts += [_Part(title, table=_table(digest, by, rows, style, tr)) for title, by, rows in tables if rows]
    lists = [
        (tr.gettext("Top idle waste"), [_waste(WasteRow(*w), tr, style, money) for w in digest.top_waste]),
        (tr.gettext("Active bookings"), [_active(BookingRow(*b), tr, style) for b in digest.active]),
        (tr.gettext("Queue"), [_waiting(BookingRow(*b), tr, style) for b in digest.waiting]),
        (tr.gettext("Failed acquisitions"), [*(_failed(BookingRow(*b), tr, style) for b in digest.failed),
                                             *(_attempts(AttemptsRow(*a), tr, style) for a in digest.attempts)]),
        (tr.gettext("Alerts"), [f"[{style.text(kind)}] {style.text(summary)}" for kind, summary in digest.alerts]),
        (tr.gettext("Provider cost disagreements (over 2 %)"), [_check(CheckRow(*c), tr, style)
                                                                for c in digest.cost_checks])]
    return parts + [_Part(title, lines, bullets=True) for title, lines in lists if lines]


def _table(digest: DigestReady, by: str, rows: Sequence[GroupRow], style: _Style, tr: Translator) -> str:
    shown = [GroupTotal(style.text(r.name), r.spend, r.gpu_hours, r.waste, r.idle_gpu_hours)
             for r in (GroupRow(*row) for row in rows)]
    total = GroupTotal("team", digest.spent, digest.gpu_hours, digest.waste, digest.idle_gpu_hours)
    return cost_table(shown, total, by, digest.currency, tr.gettext, locale_of(tr))


def _gpus(row: BookingRow, style: _Style) -> str:
    return style.text(f"{row.count}× {row.gpu}")


def _waste(row: WasteRow, tr: Translator, style: _Style, money: Callable) -> str:
    return tr.gettext("#{booking} {owner}: {hours} idle GPU-h, {waste}").format(
        booking=row.booking_id, owner=style.person(row.owner), hours=hours(row.idle_gpu_hours), waste=money(row.waste))


def _active(row: BookingRow, tr: Translator, style: _Style) -> str:
    values = {"booking": row.booking_id, "gpus": _gpus(row, style), "provider": style.text(row.provider),
              "owner": style.person(row.owner)}
    if row.until is None:
        return tr.gettext("#{booking} {gpus} on {provider} for {owner}").format(**values)
    return tr.gettext("#{booking} {gpus} on {provider} for {owner}, until {until}").format(
        until=moment_for(tr, row.until), **values)


def _waiting(row: BookingRow, tr: Translator, style: _Style) -> str:
    values = {"booking": row.booking_id, "gpus": _gpus(row, style), "owner": style.person(row.owner)}
    if row.until is not None:
        return tr.gettext("#{booking} {gpus} for {owner} — starts {start}").format(
            start=moment_for(tr, row.until), **values)
    return tr.gettext("#{booking} {gpus} for {owner} — {state}, waiting {waited}").format(
        state=_state(row.state, tr), waited=duration_for(tr, row.waited), **values)


def _state(value: str, tr: Translator) -> str:
    try:
        return state_name(BookingState(value), tr)
    except ValueError:
        return value.replace("_", " ")


# What a machine that never became usable was given up for (scheduling.acquisition.booting), beside the launch
# errors of bot.progress_lines.OUTCOMES.
GAVE_UP = {"not_ready": N_("never became reachable"), "vanished": N_("dropped while booting"),
           "burst": N_("still queued, cancelled for another provider"),
           "queue_timeout": N_("queued too long, cancelled")}


def _failed(row: BookingRow, tr: Translator, style: _Style) -> str:
    """A failed booking with what it tried, in the reader's language (the ledger's English failure column only
    for an English reader, when no attempt was recorded)."""
    tried = tr.gettext("; ").join(_outcome(provider, region, outcome, tr, style)
                                  for provider, region, outcome in row.tried)
    english = style.text(row.failure) if locale_of(tr).startswith("en") else ""
    return tr.gettext("#{booking} {gpus} for {owner}: {failure}").format(
        booking=row.booking_id, gpus=_gpus(row, style), owner=style.person(row.owner),
        failure=tried or english or tr.gettext("failed"))


def _outcome(provider: str, region: str, outcome: str, tr: Translator, style: _Style) -> str:
    words = OUTCOMES.get(outcome) or GAVE_UP.get(outcome) or UNKNOWN_OUTCOME
    return tr.gettext("{provider} {region}: {outcome}").format(
        provider=style.text(provider), region=style.text(region), outcome=tr.gettext(words)).replace("  ", " ")


def _attempts(row: AttemptsRow, tr: Translator, style: _Style) -> str:
    return tr.ngettext("{what}: {count} attempt", "{what}: {count} attempts", row.attempts).format(
        what=style.text(row.what), count=row.attempts)


def _check(row: CheckRow, tr: Translator, style: _Style) -> str:
    said = tr.gettext("#{booking} on {provider}: cost so far reported {theirs}, ours {ours} ({diff} % apart)") \
        if row.basis == "total" else \
        tr.gettext("#{booking} on {provider}: hourly rate reported {theirs}, ours {ours} ({diff} % apart)")
    return said.format(booking=row.booking_id, provider=style.text(row.provider),
                       theirs=money_for(tr, row.theirs, row.currency), ours=money_for(tr, row.ours, row.currency),
                       diff=f"{row.diff_percent:.1f}")

