"""Owing notices: a use case writes each notice it owes in the outbox, in the transaction of its state change
(`tell`), for the delivery worker (scheduling.delivery.worker) to hand over; a booking's message is owed its
progress as facts the bot words (`show_progress`), and a booking being replaced a redraw whenever its replacement
is placed or ends first."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import replace

from gpubot.db import bookings as booking_repo
from gpubot.db import outbox
from gpubot.domain.model import FINAL_STATES, Booking, BookingState
from gpubot.domain.notices import Audience, BookingProgress, Notice, ProgressStep, ProviderAlert, StepKind
from gpubot.scheduling.engine import Engine

__all__ = ["move_booking", "show_progress", "show_replacing", "tell"]


def tell(engine: Engine, notice: Notice, *, session, page: bool = True) -> bool:
    """Owe `notice` in `session`'s transaction (to Slack, one row per on-call reader; alerts to PagerDuty too,
    one row, when one is configured and `page`); False when the same notice (its key) was already owed."""
    now = engine.now()
    owed = [outbox.owe(copy, now, session=session) for copy in _per_reader(engine, notice)]
    if page and engine.pager is not None and _pages(notice):
        owed.append(outbox.owe(notice, now, session=session, channels=("pagerduty",)))
    return any(owed)


def _per_reader(engine: Engine, notice: Notice) -> list[Notice]:
    """The Slack copies of `notice`: an on-call one once per reader (the alerts channel, each on-call person),
    so a failure on one is retried without posting to the others again; any other as it is."""
    if notice.audience is not Audience.ONCALL:
        return [notice]
    team = engine.policy.team
    return [replace(notice, target=reader) for reader in dict.fromkeys((team.alerts_channel, *team.oncall))
            if reader]


def show_progress(engine: Engine, booking: Booking, trail: Sequence[ProgressStep], *, queued: bool = False,
                  notes: Sequence[ProgressStep] = (), session=None) -> None:
    """Owe `booking`'s message its progress so far, as facts the bot words (in `session`'s transaction, else in
    one of its own); of several still owed for one booking, only the newest is shown. A replacement that is placed
    (it launched, or became ready) also owes the message of the booking it replaces: its release deadline moved."""
    if not engine.shows_progress:
        return
    notices = [BookingProgress(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                               state=booking.state.value, step=_next_step(engine), provider=booking.provider or "",
                               region=booking.region or "", trail=tuple(trail), queued=queued, notes=tuple(notes))]
    if booking.replaces and booking.state in _PLACED:
        notices.append(_replacing(engine, booking.replaces, booking))
    _tell_all(engine, notices, session)


def show_replacing(engine: Engine, replaced: int, replacement: Booking, *, session=None) -> None:
    """Owe the message of booking `replaced` a redraw now that `replacement` replaces it: it shows by which
    booking, and by when it is released (drawn from the ledger at delivery)."""
    if engine.shows_progress:
        _tell_all(engine, [_replacing(engine, replaced, replacement)], session)


def move_booking(engine: Engine, booking: Booking, from_states: Iterable[BookingState], to_state: BookingState, *,
                 session, **fields: object) -> bool:
    """Move `booking` from one of `from_states` to `to_state` in the caller's transaction; whether it moved. The one
    way a booking reaches a final state: whichever way it ends, the message of a booking it was to replace is
    drawn again, no longer being replaced, in the same transaction."""
    moved = booking_repo.transition(booking.id, from_states, to_state, session=session, **fields)
    if moved and to_state in FINAL_STATES:
        _show_replacement_ended(engine, booking.with_(state=to_state), session=session)
    return moved


def _show_replacement_ended(engine: Engine, ended: Booking, *, session) -> None:
    """Owe, in `session`'s transaction, a redraw of the message of the booking `ended` (a replacement that failed,
    was cancelled or was released) replaced, while that one is still held: it is no longer being replaced."""
    hot = booking_repo.get_booking(ended.replaces, session=session) if ended.replaces and engine.shows_progress \
        and ended.state in FINAL_STATES else None
    if hot is not None and hot.state not in FINAL_STATES:
        tell(engine, _replacing(engine, hot.id, ended), session=session)


_PLACED = (BookingState.BOOTING, BookingState.ACTIVE)


def _replacing(engine: Engine, replaced: int, replacement: Booking) -> BookingProgress:
    """The progress of the booking `replaced` (running, of the same owner and shape as its replacement): where the
    replacement runs, or the state it ended in before it released `replaced`."""
    placed = replacement.state in _PLACED
    step = ProgressStep(StepKind.REPLACING, other=replacement.id,
                        provider=(replacement.provider or "") if placed else "",
                        region=(replacement.region or "") if placed else "",
                        then=replacement.state.value if replacement.state in FINAL_STATES else "")
    return BookingProgress(to=replacement.owner, booking_id=replaced, gpu=replacement.gpu, count=replacement.count,
                           state=BookingState.ACTIVE.value, step=_next_step(engine), trail=(step,))


def _tell_all(engine: Engine, notices: Sequence[Notice], session) -> None:
    """Owe `notices` in `session`'s transaction, else in one of their own."""
    if session is not None:
        for notice in notices:
            tell(engine, notice, session=session)
        return
    with engine.db.session() as own:
        for notice in notices:
            tell(engine, notice, session=own)


_steps = itertools.count()


def _next_step(engine: Engine) -> int:
    """A step number unique to this line: the time in microseconds, then a counter for lines of the same moment."""
    return int(engine.now().timestamp() * 1_000_000) * 1000 + next(_steps) % 1000


def _pages(notice: Notice) -> bool:
    return isinstance(notice, ProviderAlert)
