"""A person acting on a booking from a message they saw (a button): who may act and exactly-once, decided here once.

The bot parses the click and renders the answer; this decides. The owner (or an admin) acts on their booking;
approve, deny and replace are checked by their own use case (admins, on-call and the owner act on others'
bookings there). A click acts once per rendered message: its key is the action, the booking, the message and the
booking's version that message showed (its end, so an extension rendered anew may be clicked again). Extend claims
that key with the extension itself, so a click refused (over budget, past the limit) does not swallow a later
one; the others claim it with the clicker in it, so a refused click (a non-admin on Approve) does not swallow
the admin's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from gpubot.domain.model import Booking
from gpubot.scheduling.booking.booking import Extended, cancel, extend, load_for, release
from gpubot.scheduling.desk import approvals
from gpubot.scheduling.desk.replace import replace_booking
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle import idle
from gpubot.scheduling.lifecycle.effects import once

__all__ = ["Act", "Acted", "act"]


class Act(StrEnum):
    """What a button on a booking's message asks for."""

    EXTEND = "extend"
    RELEASE = "release"
    CANCEL = "cancel"
    APPROVE = "approve"
    DENY = "deny"
    KEEP = "keep"
    SNOOZE = "snooze"
    REPLACE = "replace"


@dataclass(frozen=True)
class Acted:
    """The outcome of a click: `done` False when this very click was already carried out (nothing changed again);
    `extended` for Extend (its own `repeat` says the same)."""

    done: bool
    extended: Extended | None = None


_OTHERS_MAY = frozenset({Act.APPROVE, Act.DENY, Act.REPLACE})  # their use case checks who acts

_USE_CASES: dict[Act, Callable[[Engine, int, str, Booking | None], object]] = {
    Act.RELEASE: lambda engine, bid, actor, _b: release(engine, bid, actor),
    Act.CANCEL: lambda engine, bid, actor, _b: cancel(engine, bid, actor),
    Act.APPROVE: lambda engine, bid, actor, _b: approvals.approve(engine, bid, actor),
    Act.DENY: lambda engine, bid, actor, _b: approvals.deny(engine, bid, actor),
    Act.KEEP: lambda engine, _bid, _actor, booking: idle.keep(engine, booking),  # told once per idle stretch
    Act.SNOOZE: lambda engine, _bid, _actor, booking: idle.snooze(engine, booking),  # told once per snooze
    Act.REPLACE: lambda engine, bid, actor, _b: replace_booking(engine, bid, actor),
}


def act(engine: Engine, action: Act, booking_id: int, actor: str, message: str, seen: str = "") -> Acted:
    """Carry out `action` on the booking for `actor`, once per rendered `message` and the booking version it
    showed (`seen`; an older message without one: the booking's end as it is now)."""
    booking = load_for(engine, booking_id, actor) if action not in _OTHERS_MAY else None
    version = seen or (booking.ends_at.isoformat() if booking and booking.ends_at else "")
    key = f"click:{action.value}:{booking_id}:{message}:{version}"
    if action is Act.EXTEND:
        extended = extend(engine, booking_id, actor, timedelta(hours=1), request_key=key)
        return Acted(not extended.repeat, extended)
    if not once(engine, f"{key}:{actor}"):
        return Acted(False)
    _USE_CASES[action](engine, booking_id, actor, booking)
    return Acted(True)
