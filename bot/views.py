"""Block Kit views: pure builders from domain data to Slack messages, built with slack_sdk's model classes
so that Slack's limits are checked when they are rendered."""

from __future__ import annotations

from decimal import Decimal

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextBlock,
    MarkdownTextObject,
    SectionBlock,
)

from domain.budget import BudgetLine
from domain.catalog import GPUS
from domain.durations import format_duration
from domain.extension import Extension
from domain.model import Booking, BookingState, button_value
from domain.money import format_money

__all__ = ["Message", "actions_message", "booking_message", "extension_text", "gpu_name", "quote_lines",
           "repeated_extension_text", "section_message", "status_lines"]

MAX_TEXT = 2900

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


def _buttons(booking: Booking) -> list[ButtonElement]:
    if booking.state == BookingState.ACTIVE:
        return [_button("Extend 1h", "booking_extend", booking),
                _button("Release", "booking_release", booking, "danger")]
    if booking.state == BookingState.BOOTING:  # launched and billed: stopping it is a release
        return [_button("Release", "booking_release", booking, "danger")]
    if booking.state == BookingState.AWAITING_APPROVAL:
        return [_button("Approve", "booking_approve", booking, "primary"),
                _button("Deny", "booking_deny", booking, "danger")]
    if booking.state in (BookingState.REQUESTED, BookingState.QUEUED, BookingState.SCHEDULED,
                         BookingState.ACQUIRING):
        return [_button("Cancel", "booking_cancel", booking)]
    return []


def booking_headline(booking: Booking) -> str:
    """`🟢 #12 4× A100 40GB for 6h — active on lambda us-east-1`."""
    where = f" on {booking.provider} {booking.region}" if booking.provider else ""
    return (f"{_STATE_ICON.get(booking.state, '')} *{booking.label}* {gpu_name(booking.gpu, booking.count)} for "
            f"{format_duration(booking.duration)} — {booking.state.value.replace('_', ' ')}{where}")


def booking_message(booking: Booking, lines: list[str], currency: str) -> Message:
    """The booking's message: headline, progress/quote lines, and the buttons its state allows."""
    body = "\n".join([booking_headline(booking), *[line for line in lines if line]])
    blocks: list = [_section(body)]
    if booking.connect and booking.state == BookingState.ACTIVE:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=f"Connect: `{booking.connect}`")]))
    buttons = _buttons(booking)
    if buttons:
        blocks.append(ActionsBlock(block_id=f"booking-{booking.id}", elements=buttons))
    return Message.of(body, blocks)


def quote_lines(price: Decimal, total: Decimal, duration_text: str, provider: str, region: str,
                budget: list[BudgetLine], estimate: Decimal, currency: str) -> list[str]:
    """`≈ $58.08 for 6h at $2.42/GPU-h on lambda us-east-1 — team at 74 % of $5,000 after this (was 73 %)`."""
    text = (f"≈ {format_money(total, currency)} for {duration_text} at {format_money(price, currency)}/GPU-h "
            f"on {provider} {region}")
    effects = [f"{line.scope} at {line.percent_with(estimate)} % of {format_money(line.limit, currency)} after "
               f"this (was {line.percent_with()} %)" for line in budget]
    return [text + (" — " + "; ".join(effects) if effects else "")]


def status_lines(bookings: list[Booking], everyone: bool) -> str:
    """A compact list of bookings, newest first."""
    if not bookings:
        return "No bookings." if everyone else "You have no bookings. Try `/gpu book a100x4 6h`."
    rows = []
    for booking in bookings:
        who = f" (<@{booking.owner}>)" if everyone else ""
        until = f", until {booking.ends_at:%Y-%m-%d %H:%M} UTC" if booking.ends_at and booking.state in \
            (BookingState.BOOTING, BookingState.ACTIVE) else ""
        starts = f", starts {booking.start_at:%Y-%m-%d %H:%M} UTC" if booking.start_at and booking.state == \
            BookingState.SCHEDULED else ""
        rows.append(booking_headline(booking) + who + until + starts)
    return "\n".join(rows)


def extension_text(booking: Booking, extension: Extension, added_cost: Decimal, warning: str, currency: str
                   ) -> str:
    """`#12 now ends 2026-11-02 17:00 UTC: 7h in all (+1h, ≈ $2.42 more).` and what an admin passed."""
    text = (f"{booking.label} now ends {extension.new_end:%Y-%m-%d %H:%M} UTC: {format_duration(extension.length)} "
            f"in all (+{format_duration(extension.by)}, ≈ {format_money(added_cost, currency)} more).")
    if extension.past_limit:
        text += (f" That is past the {format_duration(extension.limit)} limit per booking "
                 f"(booking.max_duration), allowed because an admin extended it.")
    return f"{text} {warning}" if warning else text


def repeated_extension_text(booking: Booking) -> str:
    """The answer to a click or command already carried out: nothing changed again."""
    ends = f"ends {booking.ends_at:%Y-%m-%d %H:%M} UTC, " if booking.ends_at else ""
    return (f"That extension of {booking.label} was already made ({ends}{format_duration(booking.duration)} in "
            f"all); nothing more was added. `/gpu extend {booking.id} 1h` extends it again.")


MAX_BLOCKS = 50  # Slack's limit per message


def section_message(text: str) -> Message:
    """A plain message: one section per paragraph (a blank line would show as a gap), a paragraph longer than
    one section may hold split at line ends, up to Slack's 50 blocks (a long queue or list of budgets is shown
    whole, not clipped)."""
    sections = [chunk for paragraph in text.split("\n\n") for chunk in _pack(paragraph.strip("\n").split("\n"))
                if chunk.strip()] or [""]
    if len(sections) > MAX_BLOCKS:
        left = sum(chunk.count("\n") + 1 for chunk in sections[MAX_BLOCKS - 1:])
        sections = [*sections[:MAX_BLOCKS - 1], f"… and {left} more lines."]
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
