"""Notices of a capacity watch: it found an offer, or it ended without one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import ClassVar

from gpubot.domain.notices.base import Notice, NoticeAction

__all__ = ["WatchEnded", "WatchFired"]


@dataclass(frozen=True)
class WatchFired(Notice):
    """A watch saw its shape become available; Book now takes that offer for `duration`. The watch has ended."""

    actions: ClassVar[tuple[NoticeAction, ...]] = (NoticeAction.BOOK_WATCHED,)
    to: str
    watch_id: int
    gpu: str
    count: int
    provider: str = ""
    region: str = ""
    price: Decimal = Decimal(0)
    currency: str = "USD"
    duration: timedelta = timedelta(0)

    @property
    def key(self) -> str:
        return f"watch:{self.watch_id}"


@dataclass(frozen=True)
class WatchEnded(Notice):
    """A watch ran its time (`watched_for`) and no capacity of its shape appeared."""

    to: str
    watch_id: int
    gpu: str
    count: int
    watched_for: timedelta = timedelta(0)

    @property
    def key(self) -> str:
        return f"watch-ended:{self.watch_id}"
