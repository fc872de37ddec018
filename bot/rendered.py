"""What every renderer shares: the rendered shape of a notice, its action ids, and the words for its booking,
its GPUs and its buttons."""

from __future__ import annotations

from dataclasses import dataclass

from gpubot.bot.i18n import Translator
from gpubot.bot.views import Message, escape, section_message
from gpubot.domain import notices as n
from gpubot.domain.notices import Notice, NoticeAction

__all__ = ["ACTION_IDS", "Rendered", "Upload", "buttons", "gpus", "label", "say"]

ACTION_IDS: dict[NoticeAction, str] = {
    NoticeAction.EXTEND: "booking_extend", NoticeAction.RELEASE: "booking_release", NoticeAction.KEEP: "idle_keep",
    NoticeAction.SNOOZE: "idle_snooze", NoticeAction.APPROVE: "booking_approve", NoticeAction.DENY: "booking_deny",
    NoticeAction.RELEASE_REPLACED: "booking_release", NoticeAction.REPLACE: "booking_replace",
    NoticeAction.BOOK_WATCHED: "watch_book",
}


@dataclass(frozen=True)
class Upload:
    """A file to share: its name, bytes, title and the comment it comes with."""

    filename: str
    data: bytes
    title: str
    comment: str


@dataclass(frozen=True)
class Rendered:
    """What Slack shows for a notice: the message, the line its booking's message shows now (or None), and a file
    to share (or None)."""

    message: Message | None
    booking_line: str | None = None
    upload: Upload | None = None


def label(notice: n._AboutBooking) -> str:
    """`#12`: how a notice names its booking."""
    return f"#{notice.booking_id}"


def gpus(notice: n._AboutBooking | n.WatchFired | n.WatchEnded) -> str:
    """`4× a100`, escaped."""
    return escape(f"{notice.count}× {notice.gpu}")  # as the booking's own words had it: `4× a100`


def buttons(notice: Notice, tr: Translator, value: str) -> list[tuple[str, str, str]]:
    """The buttons of the actions a notice offers, labelled in `tr`'s language, each carrying `value`."""
    labels = {NoticeAction.EXTEND: tr.gettext("Extend 1h"), NoticeAction.RELEASE: tr.gettext("Release now"),
              NoticeAction.KEEP: tr.gettext("Keep"), NoticeAction.SNOOZE: tr.gettext("Snooze 1h"),
              NoticeAction.APPROVE: tr.gettext("Approve"), NoticeAction.DENY: tr.gettext("Deny"),
              NoticeAction.REPLACE: tr.gettext("Replace"), NoticeAction.BOOK_WATCHED: tr.gettext("Book now")}
    return [(labels[a], ACTION_IDS[a], value) for a in notice.actions if a in labels]


def say(text: str) -> Rendered:
    """A plain message."""
    return Rendered(section_message(text))
