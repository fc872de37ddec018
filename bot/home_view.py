"""App Home as a pure builder: the person's live and queued bookings with the buttons of their messages (and, as
`/gpu status` says it, which booking replaces one and by when it is released), a Book button, the queue with
positions, the month's spend and commitment against each budget as a bar, and the bookings that ended in the last
day. Buttons carry the same action ids and values as a booking's message, so a click goes down the same path and
acts once (bot/listeners/actions.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.bot.i18n import ENGLISH, Translator, money_for
from gpubot.bot.views import MAX_TEXT, gpu_name, status_line, status_lines
from gpubot.domain.budget import BudgetLine
from gpubot.domain.model import FINAL_STATES, Booking, BookingState, button_value
from gpubot.domain.replacing import replacements
from gpubot.domain.report_text import scope_name
from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

__all__ = ["BOOK_ACTION", "ENDED_WITHIN", "HomeData", "budget_bar", "home_buttons", "home_view"]

BOOK_ACTION = "home_book"  # the Home tab's Book button: opens the booking modal
ENDED_WITHIN = timedelta(days=1)  # ended bookings older than this are left to `/gpu status all`
MAX_LIVE = 20  # bookings shown with their buttons (two blocks each; a Home view holds 100 blocks)
MAX_QUEUE = 20
BAR_CELLS = 20
HALF_CENT = Decimal("0.005")  # less is shown as 0.00, and fills no cell


@dataclass(frozen=True)
class HomeData:
    """What the Home tab shows one person, as read from the ledger."""

    user: str
    now: datetime
    currency: str
    bookings: Sequence[Booking] = ()  # theirs, any state, newest first
    queue: Sequence[tuple[int, Booking]] = ()  # everyone's waiting bookings with their positions
    budgets: Sequence[BudgetLine] = field(default_factory=tuple)  # the team's first, then theirs, their project's
    replace_grace: timedelta | None = None  # health.replace_grace: a booking being replaced is released by then


def _section(text: str) -> SectionBlock:
    return SectionBlock(text=MarkdownTextObject(text=text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"))


def _button(text: str, action_id: str, booking: Booking, style: str | None = None) -> ButtonElement:
    return ButtonElement(text=text, action_id=action_id, value=button_value(booking), style=style)


def home_buttons(booking: Booking, tr: Translator = ENGLISH) -> list[ButtonElement]:
    """The owner's buttons for a booking on Home: Extend and Release while it runs, Release while it boots,
    Cancel while it waits (approval included: the owner withdraws it; approving is an admin's, on the message)."""
    if booking.state == BookingState.ACTIVE:
        return [_button(tr.gettext("Extend 1h"), "booking_extend", booking),
                _button(tr.gettext("Release"), "booking_release", booking, "danger")]
    if booking.state == BookingState.BOOTING:
        return [_button(tr.gettext("Release"), "booking_release", booking, "danger")]
    if booking.state in (BookingState.REQUESTED, BookingState.QUEUED, BookingState.SCHEDULED,
                         BookingState.ACQUIRING, BookingState.AWAITING_APPROVAL):
        return [_button(tr.gettext("Cancel"), "booking_cancel", booking)]
    return []


def _cells(amount: Decimal, limit: Decimal, cells: int) -> int:
    """Cells `amount` fills of `limit`: rounded, but at least one for any amount shown as a cent or more (a bar
    never hides spend)."""
    if amount < HALF_CENT:
        return 0
    return min(cells, max(1, int((amount / limit * cells).to_integral_value())))


def budget_bar(line: BudgetLine, cells: int = BAR_CELLS) -> str:
    """`████▒▒░░░░░░░░░░░░░░`: spent (█), committed (▒) and what is left (░) of the limit, in `cells` cells."""
    if line.limit <= 0:
        return "▒" * cells if line.projected > 0 else "░" * cells
    spent = _cells(line.spent, line.limit, cells)
    committed = min(cells - spent, _cells(line.committed, line.limit, cells))
    return "█" * spent + "▒" * committed + "░" * (cells - spent - committed)


def _budget_text(line: BudgetLine, currency: str, tr: Translator) -> str:
    shown = tr.gettext("{spent} spent + {committed} committed of {limit} ({percent} %)").format(
        spent=money_for(tr, line.spent, currency), committed=money_for(tr, line.committed, currency),
        limit=money_for(tr, line.limit, currency), percent=line.percent_with())
    over = " ⚠️" if line.limit > 0 and line.projected > line.limit else ""
    return f"*{scope_name(line.scope, tr.gettext)}* `{budget_bar(line)}`{over}\n{shown}"


def _queue_text(data: HomeData, tr: Translator) -> str:
    rows = []
    for position, booking in data.queue[:MAX_QUEUE]:
        row = tr.gettext("{position}. {label} {gpus} (<@{owner}>)").format(
            position=position, label=booking.label, gpus=gpu_name(booking.gpu, booking.count), owner=booking.owner)
        rows.append(f"*{row}*" if booking.owner == data.user else row)
    if len(data.queue) > MAX_QUEUE:
        rows.append(tr.gettext("… and {count} more: `/gpu queue`").format(count=len(data.queue) - MAX_QUEUE))
    return "\n".join(rows) or tr.gettext("Nobody is waiting.")


def _ended_recently(booking: Booking, now: datetime) -> bool:
    ended = booking.released_at or booking.requested_at
    return booking.state in FINAL_STATES and now - ended <= ENDED_WITHIN


def home_view(data: HomeData, tr: Translator = ENGLISH) -> View:
    """The Home tab for one person, in their language."""
    live = [b for b in data.bookings if b.state not in FINAL_STATES]
    ended = [b for b in data.bookings if _ended_recently(b, data.now)]
    replacing = replacements(data.bookings)
    blocks: list = [HeaderBlock(text=tr.gettext("Your GPU bookings")),
                    ActionsBlock(block_id="home-book", elements=[ButtonElement(
                        text=tr.gettext("Book GPUs"), action_id=BOOK_ACTION, value="book", style="primary")])]
    if not live:
        blocks.append(_section(tr.gettext("You have no bookings. Try `/gpu book a100x4 6h`.")))
    for booking in live[:MAX_LIVE]:
        blocks.append(_section(status_line(booking, False, tr, replacing.get(booking.id), data.replace_grace)))
        buttons = home_buttons(booking, tr)
        if buttons:
            blocks.append(ActionsBlock(block_id=f"home-booking-{booking.id}", elements=buttons))
    if len(live) > MAX_LIVE:
        blocks.append(_section(tr.gettext("… and {count} more: `/gpu status`").format(count=len(live) - MAX_LIVE)))
    blocks += [DividerBlock(), HeaderBlock(text=tr.gettext("Queue")), _section(_queue_text(data, tr)),
               DividerBlock(), HeaderBlock(text=tr.gettext("Spend this month"))]
    blocks += [_section(_budget_text(line, data.currency, tr)) for line in data.budgets] or \
        [_section(tr.gettext("No budget is set."))]
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=tr.gettext(
        "█ spent  ▒ committed (what running and waiting bookings will still cost)  ░ left"))]))
    blocks += [DividerBlock(), HeaderBlock(text=tr.gettext("Ended in the last day"))]
    if ended:
        blocks.append(_section(status_lines(ended, everyone=False, tr=tr)))
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=tr.gettext(
        "Older bookings, and everyone's: `/gpu status all`"))]))
    return View(type="home", blocks=blocks)
