"""A NoticeChannel that records the notices handed to it, and answers as told (a channel up, down or refusing)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubot.domain.booking_view import BookingView
from gpubot.domain.notices import Audience, Notice
from gpubot.domain.ports import Delivery


@dataclass
class RecordingChannel:
    """Implements domain.ports.NoticeChannel: every delivery is recorded; `answer` is what it says back."""

    answer: Delivery = field(default_factory=lambda: Delivery("accepted"))
    tried: list[Notice] = field(default_factory=list)
    accepted: list[Notice] = field(default_factory=list)
    in_doubt: list[Notice] = field(default_factory=list)  # handed over with "an earlier try may have sent it"
    views: list[BookingView | None] = field(default_factory=list)  # the booking handed over with each notice
    post_at: tuple[str, str] | None = None  # answer a new booking message "posted here" (channel, ts)

    def deliver(self, notice: Notice, in_doubt: bool = False, booking: BookingView | None = None) -> Delivery:
        self.tried.append(notice)
        self.views.append(booking)
        if self.post_at and self.answer.status == "accepted" and \
                notice.audience is Audience.NEW_BOOKING_MESSAGE:
            self.accepted.append(notice)
            return Delivery("accepted", posted=self.post_at)
        if in_doubt:
            self.in_doubt.append(notice)
        if self.answer.status == "accepted":
            self.accepted.append(notice)
        return self.answer
