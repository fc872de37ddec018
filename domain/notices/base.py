"""The shape every notice shares: its audience, the actions it offers, its key, and what it follows."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

__all__ = ["Audience", "Notice", "NoticeAction"]


class NoticeAction(StrEnum):
    """A button a notice offers; the bot maps each to its own action id."""

    EXTEND = "extend"
    RELEASE = "release"
    KEEP = "keep"
    SNOOZE = "snooze"
    APPROVE = "approve"
    DENY = "deny"
    RELEASE_REPLACED = "release_replaced"
    REPLACE = "replace"
    BOOK_WATCHED = "book_watched"


class Audience(StrEnum):
    """Who reads a notice: one person by DM, the booking's message (posted, then updated), a channel, or on-call
    (chat and pager)."""

    PERSON = "person"
    NEW_BOOKING_MESSAGE = "new_booking_message"  # posts the booking's message (its later notices update it)
    BOOKING_MESSAGE = "booking_message"
    CHANNEL = "channel"
    ONCALL = "oncall"


@dataclass(frozen=True)
class Notice:
    """Something the engine tells; subclasses carry the facts."""

    audience: ClassVar[Audience] = Audience.PERSON
    actions: ClassVar[tuple[NoticeAction, ...]] = ()

    @property
    def key(self) -> str:
        """The stable key: one delivery per key, while its outbox row is kept (all the life of its booking)."""
        raise NotImplementedError

    @property
    def follows(self) -> tuple[str, ...]:
        """The keys of notices this one never overtakes on its channel while they are still owed."""
        return ()


@dataclass(frozen=True)
class _AboutBooking(Notice):
    """A notice about one booking, told to `to` (its owner unless said)."""

    to: str
    booking_id: int
    gpu: str
    count: int

    @property
    def follows(self) -> tuple[str, ...]:
        """The booking's message is posted before anything updates it or speaks of it."""
        return (f"requested:{self.booking_id}",)
