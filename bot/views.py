"""Block Kit views: pure builders from domain data to Slack messages, built with slack_sdk's model classes
so that Slack's limits are checked when they are rendered."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal

from gpubot.bot.i18n import ENGLISH, N_, Translator, duration_for, money_for, sentences
from gpubot.bot.refusals import passed_text
from gpubot.bot.times import moment_for
from gpubot.domain.budget import BudgetLine
from gpubot.domain.catalog import GPUS
from gpubot.domain.extension import Extension
from gpubot.domain.model import FINAL_STATES, Booking, BookingState, button_value
from gpubot.domain.replacing import replaced_until, replacements
from gpubot.domain.report_text import scope_name
from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextBlock,
    MarkdownTextObject,
    SectionBlock,
)

__all__ = ["Message", "actions_message", "booking_headline", "booking_message", "budget_effects", "escape",
           "extension_text", "gpu_name", "quote_lines", "repeated_extension_text", "section_message", "state_name",
           "status_line", "status_lines"]

MAX_TEXT = 2900

_STATE_NAME = {
    BookingState.REQUESTED: N_("requested"), BookingState.AWAITING_APPROVAL: N_("awaiting approval"),
    BookingState.SCHEDULED: N_("scheduled"), BookingState.QUEUED: N_("queued"),
    BookingState.ACQUIRING: N_("acquiring"), BookingState.BOOTING: N_("booting"), BookingState.ACTIVE: N_("active"),
    BookingState.RELEASING: N_("releasing"), BookingState.RELEASED: N_("released"), BookingState.FAILED: N_("failed"),
    BookingState.CANCELLED: N_("cancelled"),
}
_STATE_ICON = {
    BookingState.REQUESTED: "⏳", BookingState.AWAITING_APPROVAL: "🛂", BookingState.SCHEDULED: "🗓",
    BookingState.QUEUED: "🕒", BookingState.ACQUIRING: "🔎", BookingState.BOOTING: "🟡", BookingState.ACTIVE: "🟢",
    BookingState.RELEASING: "⏹", BookingState.RELEASED: "✅", BookingState.FAILED: "❌",
    BookingState.CANCELLED: "🚫",
}


class Message(dict):
    """A chat message: fallback `text` and `blocks` as dicts, ready for chat.postMessage/respond."""

    @classmethod
    def of(cls, text: str, blocks: list | None = None) -> Message:
        """A message with fallback text and model blocks (validated while turned into dicts)."""
        return cls(text=_clip(text), blocks=[b.to_dict() for b in (blocks or [])])


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def gpu_name(gpu: str, count: int) -> str:
    """`4× A100 40GB`."""
    model = GPUS.get(gpu)
    return f"{count}× {model.display if model else gpu}"


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=_clip(text)))


def _button(text: str, action_id: str, booking: Booking, style: str | None = None) -> ButtonElement:
    return ButtonElement(text=text, action_id=action_id, value=button_value(booking), style=style)


def _buttons(booking: Booking, tr: Translator) -> list[ButtonElement]:
    if booking.state == BookingState.ACTIVE:
        return [_button(tr.gettext("Extend 1h"), "booking_extend", booking),
                _button(tr.gettext("Release"), "booking_release", booking, "danger")]
    if booking.state == BookingState.BOOTING:  # launched and billed: stopping it is a release
        return [_button(tr.gettext("Release"), "booking_release", booking, "danger")]
    if booking.state == BookingState.AWAITING_APPROVAL:
        return [_button(tr.gettext("Approve"), "booking_approve", booking, "primary"),
                _button(tr.gettext("Deny"), "booking_deny", booking, "danger")]
    if booking.state in (BookingState.REQUESTED, BookingState.QUEUED, BookingState.SCHEDULED,
                         BookingState.ACQUIRING):
        return [_button(tr.gettext("Cancel"), "booking_cancel", booking)]
    return []


def state_name(state: BookingState, tr: Translator = ENGLISH) -> str:
    """`awaiting approval`, `排队中`: a booking state as people read it."""
    return tr.gettext(_STATE_NAME[state]) if state in _STATE_NAME else state.value.replace("_", " ")


def escape(text: str | None) -> str:
    """User-supplied text made inert in Slack mrkdwn: `&`, `<`, `>` escaped (no mention, no link), and backticks
    turned into look-alikes (no code fence to break out of)."""
    return (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("`", "ˋ")


def booking_headline(booking: Booking, tr: Translator = ENGLISH) -> str:
    """`🟢 #12 4× A100 40GB for 6h — active on lambda us-east-1`."""
    values = {"icon": _STATE_ICON.get(booking.state, ""), "label": booking.label,
              "gpus": gpu_name(booking.gpu, booking.count), "duration": duration_for(tr, booking.duration),
              "state": state_name(booking.state, tr), "provider": booking.provider, "region": booking.region}
    if booking.provider:
        return tr.gettext("{icon} *{label}* {gpus} for {duration} — {state} on {provider} {region}").format(**values)
    return tr.gettext("{icon} *{label}* {gpus} for {duration} — {state}").format(**values)


def booking_message(booking: Booking, lines: list[str], currency: str, tr: Translator = ENGLISH) -> Message:
    """The booking's message: headline, progress/quote lines, and the buttons its state allows."""
    body = "\n".join([booking_headline(booking, tr), *[line for line in lines if line]])
    blocks: list = [_section(body)]
    if booking.connect and booking.state == BookingState.ACTIVE:
        connect = tr.gettext("Connect: `{command}`").format(command=booking.connect)
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=connect)]))
    buttons = _buttons(booking, tr)
    if buttons:
        blocks.append(ActionsBlock(block_id=f"booking-{booking.id}", elements=buttons))
    return Message.of(body, blocks)


def budget_effects(budget: list[BudgetLine], estimate: Decimal, currency: str, tr: Translator = ENGLISH
                   ) -> list[str]:
    """`team at 74 % of $5,000.00 after this (was 73 %)`, one per budget line."""
    return [tr.gettext("{scope} at {percent} % of {limit} after this (was {was} %)").format(
        scope=scope_name(line.scope, tr.gettext), percent=line.percent_with(estimate),
        limit=money_for(tr, line.limit, currency),
        was=line.percent_with()) for line in budget]


def quote_lines(price: Decimal, total: Decimal, duration_text: str, provider: str, region: str,
                budget: list[BudgetLine], estimate: Decimal, currency: str, tr: Translator = ENGLISH) -> list[str]:
    """`≈ $58.08 for 6h at $2.42/GPU-h on lambda us-east-1 — team at 74 % of $5,000 after this (was 73 %)`."""
    text = tr.gettext("≈ {total} for {duration} at {price}/GPU-h on {provider} {region}").format(
        total=money_for(tr, total, currency), duration=duration_text, price=money_for(tr, price, currency),
        provider=provider, region=region)
    effects = budget_effects(budget, estimate, currency, tr)
    return [text + (" — " + tr.gettext("; ").join(effects) if effects else "")]


def status_lines(bookings: list[Booking], everyone: bool, tr: Translator = ENGLISH,
                 replace_grace: timedelta | None = None) -> str:
    """A compact list of bookings, newest first; a booking being replaced says by which and until when (it is
    released `replace_grace` after its replacement is ready, at the latest)."""
    if not bookings:
        return tr.gettext("No bookings.") if everyone else \
            tr.gettext("You have no bookings. Try `/gpu book a100x4 6h`.")
    replacing = replacements(bookings)
    return "\n".join(status_line(booking, everyone, tr, replacing.get(booking.id), replace_grace)
                     for booking in bookings)


def status_line(booking: Booking, everyone: bool, tr: Translator = ENGLISH, replacement: Booking | None = None,
                replace_grace: timedelta | None = None) -> str:
    """One booking's row of `status_lines`; `replacement` is the live booking replacing it, if any."""
    who = f" (<@{booking.owner}>)" if everyone else ""
    until = tr.gettext(", until {time}").format(time=moment_for(tr, booking.ends_at)) if booking.ends_at and \
        booking.state in (BookingState.BOOTING, BookingState.ACTIVE) else ""
    starts = tr.gettext(", starts {time}").format(time=moment_for(tr, booking.start_at)) if booking.start_at and \
        booking.state == BookingState.SCHEDULED else ""
    return booking_headline(booking, tr) + who + until + starts + _replaced(booking, replacement, replace_grace, tr)


_IN_STATUS = (N_(", being replaced by {label} (released {grace} after it is ready)"),
              N_(", being replaced by {label} (released by {time} at the latest)"))
_IN_MESSAGE = (N_("🔁 Being replaced by {label} (released {grace} after it is ready)."),
               N_("🔁 Being replaced by {label} (released by {time} at the latest)."))


def _replaced(booking: Booking, new: Booking | None, grace: timedelta | None, tr: Translator,
              forms: tuple[str, str] = _IN_STATUS) -> str:
    """`, being replaced by #13 (released by 16:30 UTC at the latest)`, for a held booking being replaced (in
    `forms`: before its replacement can be used, then after)."""
    if new is None or grace is None or booking.state in FINAL_STATES:
        return ""
    until = replaced_until(new, grace)
    if until is None:
        return tr.gettext(forms[0]).format(label=new.label, grace=duration_for(tr, grace))
    return tr.gettext(forms[1]).format(label=new.label, time=moment_for(tr, until))


def replaced_line(booking: Booking, new: Booking | None, grace: timedelta | None, tr: Translator) -> str:
    """`🔁 Being replaced by #13 (released by 16:30 UTC at the latest).`: the status line's words as a line of the
    booking's own message; empty when it is not being replaced."""
    return _replaced(booking, new, grace, tr, _IN_MESSAGE)


def extension_text(booking: Booking, extension: Extension, added_cost: Decimal,
                   over_budget: Sequence[tuple[str, Decimal, Decimal]], currency: str, tr: Translator = ENGLISH) -> str:
    """`#12 now ends 2026-11-02 17:00 UTC: 7h in all (+1h, ≈ $2.42 more).` and what an admin passed."""
    text = tr.gettext("{label} now ends {time}: {length} in all (+{by}, ≈ {cost} more).").format(
        label=booking.label, time=moment_for(tr, extension.new_end), length=duration_for(tr, extension.length),
        by=duration_for(tr, extension.by), cost=money_for(tr, added_cost, currency))
    if extension.past_limit:
        text = sentences(text, tr.gettext("That is past the {limit} limit per booking (booking.max_duration), "
                                          "allowed because an admin extended it.").format(
            limit=duration_for(tr, extension.limit)))
    if over_budget:  # `over_budget = "warn"` (or an admin) let it pass these budgets
        text = sentences(text, tr.gettext("⚠️ Over budget: {over}.").format(
            over=passed_text(over_budget, currency, tr)))
    return text


def repeated_extension_text(booking: Booking, tr: Translator = ENGLISH) -> str:
    """The answer to a click or command already carried out: nothing changed again."""
    values = {"label": booking.label, "length": duration_for(tr, booking.duration), "id": booking.id}
    if booking.ends_at:
        return tr.gettext("That extension of {label} was already made (ends {time}, {length} in all); nothing "
                          "more was added. `/gpu extend {id} 1h` extends it again.").format(
                              time=moment_for(tr, booking.ends_at), **values)
    return tr.gettext("That extension of {label} was already made ({length} in all); nothing more was added. "
                      "`/gpu extend {id} 1h` extends it again.").format(**values)


MAX_BLOCKS = 50  # Slack's limit per message


def section_message(text: str, tr: Translator = ENGLISH) -> Message:
    """A plain message: one section per paragraph (a blank line would show as a gap), a paragraph longer than
    one section may hold split at line ends, up to Slack's 50 blocks (a long queue or list of budgets is shown
    whole, not clipped)."""
    sections = [chunk for paragraph in text.split("\n\n") for chunk in _pack(paragraph.strip("\n").split("\n"))
                if chunk.strip()] or [""]
    if len(sections) > MAX_BLOCKS:
        left = sum(chunk.count("\n") + 1 for chunk in sections[MAX_BLOCKS - 1:])
        more = tr.ngettext("… and {count} more line.", "… and {count} more lines.", left).format(count=left)
        sections = [*sections[:MAX_BLOCKS - 1], more]
    return Message.of(text, [_section(chunk) for chunk in sections])


def _pack(lines: list[str]) -> list[str]:
    """Lines joined into chunks of at most MAX_TEXT characters (a longer single line is clipped); a ``` block is
    closed at the end of a chunk and reopened in the next, so no chunk shows a half-fenced table."""
    chunks: list[str] = []
    for line in lines:
        if chunks and len(chunks[-1]) + 1 + len(line) + 6 <= MAX_TEXT:
            chunks[-1] += "\n" + line
        else:
            chunks.append(line)
    fenced, inside = [], False
    for chunk in chunks:
        opened = f"```{chunk}" if inside else chunk
        inside = (inside + chunk.count("```")) % 2 == 1
        fenced.append(f"{opened}```" if inside else opened)
    return fenced


def actions_message(text: str, actions: list[tuple[str, str, str]]) -> Message:
    """A section with buttons: each action is (label, action id, value)."""
    blocks: list = [_section(text)]
    if actions:
        blocks.append(ActionsBlock(elements=[ButtonElement(text=label, action_id=action_id, value=value)
                                             for label, action_id, value in actions]))
    return Message.of(text, blocks)
