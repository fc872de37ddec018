"""Idle reclamation: remind the owner of GPUs that stay under the threshold, release them after the grace.

Two rules, one reminder (Keep / Snooze / Release): GPUs that no compute process has held for
`no_process_for` (the job finished; the agent reports processes) are reminded sooner, with `no_process_grace`;
otherwise GPUs under `util_below` for `for`, with `grace`. The booking's `idle_rule` records which rule reminded,
so a switch of rule (a process starts again on idle GPUs) reminds again with that rule's grace.

No telemetry is not idleness: a booking whose newest sample is older than `telemetry_stale_after` is reported
once as "no telemetry" and never reclaimed for it. Nor is unknown utilisation: a GPU reporting none (MIG enabled)
keeps its booking from being reclaimed, and the owner is told so once. Both clocks start when the machine became
reachable (`ready_at`), not at its launch: a booting machine is neither idle nor silent (its agent is told 409,
keep pushing, until then), and no sample from before it was ready is counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from gpubot.db import bookings as repo
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import (
    IdleKept,
    IdleReclaimed,
    IdleReminder,
    IdleSnoozed,
    ReleaseWhy,
    TelemetryStale,
    UtilisationUnknown,
)
from gpubot.domain.policy import telemetry_lookback
from gpubot.domain.telemetry import (
    IDLE,
    NO_PROCESS,
    Sample,
    grace_of,
    idle_since,
    latest_per_gpu,
    no_process_since,
    utilisation_unknown,
)
from gpubot.scheduling.delivery import tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.billing import finish

__all__ = ["IdlePass", "check_idle", "idle_pass", "keep", "snooze"]


@dataclass(frozen=True)
class IdlePass:
    """What one idle pass found: how many bookings are idle now, and each booking checked as the pass left it, by
    id (what it wrote: the replay reads no booking back)."""

    idle: int
    left: dict[int, Booking]


def check_idle(engine: Engine, only: Iterable[int] | None = None) -> int:
    """The idle job: one `idle_pass`; how many bookings are idle now."""
    return idle_pass(engine, only).idle


def idle_pass(engine: Engine, only: Iterable[int] | None = None) -> IdlePass:
    """One pass over running bookings (or just those with ids in `only`): how many are idle now, and each as the
    pass left it."""
    now = engine.now()
    with engine.db.session() as session:
        if only is None:
            active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
        else:
            found = (repo.get_booking(booking_id, session=session) for booking_id in only)
            active = [b for b in found if b is not None and b.state == BookingState.ACTIVE]
        recent = telemetry_repo.samples_of([b.id for b in active], now - _lookback(engine), session=session)
    idle, left = 0, {}
    for booking in active:
        found, left[booking.id] = _check(engine, booking, _since_ready(booking, recent[booking.id]), now)
        idle += found
    return IdlePass(idle, left)


def _since_ready(booking: Booking, samples: list[Sample]) -> list[Sample]:
    """The samples taken once the booking's machine was reachable."""
    return [s for s in samples if s.at >= booking.ready_at] if booking.ready_at else samples


def _lookback(engine: Engine) -> timedelta:
    """How far back each check reads samples: enough to see a whole idle window and to judge staleness."""
    return telemetry_lookback(engine.policy)


def _check(engine: Engine, booking: Booking, samples: list[Sample], now: datetime) -> tuple[bool, Booking]:
    """(idle now, the booking as this check left it)."""
    if booking.snoozed_until and now < booking.snoozed_until:
        return False, booking
    if _stale(engine, booking, samples, now):
        return False, booking
    if unknown := utilisation_unknown(latest_per_gpu(samples)):
        with engine.db.session() as session:  # told once per booking (the notice's key)
            tell(engine, UtilisationUnknown(to=booking.owner, booking_id=booking.id, gpu=booking.gpu,
                                            count=booking.count, gpu_indexes=tuple(unknown)), session=session)
    rule, start, grace = _stretch(engine, booking, samples, now)
    if start is None:
        return False, _clear(engine, booking)
    if booking.idle_kept_since == start:
        return True, booking
    if booking.idle_since != start or booking.idle_reminded_at is None or (booking.idle_rule or IDLE) != rule:
        return True, _remind(engine, booking, start, now, rule, grace)
    if now - booking.idle_reminded_at >= grace:
        return True, _act_after_grace(engine, booking, start, now, rule, grace)
    return True, booking


def _stretch(engine: Engine, booking: Booking, samples: list[Sample],
             now: datetime) -> tuple[str, datetime | None, timedelta]:
    """The rule that holds now, when its stretch began (None: neither holds) and its grace: no process first."""
    idle = engine.policy.idle
    known = booking.idle_since if booking.idle_rule == NO_PROCESS else None
    start = no_process_since(samples, idle.util_below, idle.no_process_for, now, known)
    if start is not None:
        return NO_PROCESS, start, grace_of(idle, NO_PROCESS)
    return IDLE, idle_since(samples, idle.util_below, idle.for_, now, booking.idle_since), grace_of(idle, IDLE)


def _stale(engine: Engine, booking: Booking, samples: list[Sample], now: datetime) -> bool:
    stale_after = engine.policy.health.telemetry_stale_after
    if samples and now - samples[-1].at <= stale_after:
        return False
    ready = booking.ready_at or booking.started_at  # bookings from before `ready_at` existed: their launch
    if ready and now - ready > stale_after:
        with engine.db.session() as session:
            tell(engine, TelemetryStale(to=booking.owner, booking_id=booking.id, gpu=booking.gpu,
                                        count=booking.count, silent_for=stale_after), session=session)
    return True


def _hourly(engine: Engine, booking: Booking) -> Decimal:
    price = booking.price_per_gpu_hour or Decimal(0)
    return engine.to_team(price * booking.count, booking.currency or engine.currency)


def _remind(engine: Engine, booking: Booking, start: datetime, now: datetime, rule: str, grace: timedelta
            ) -> Booking:
    # The key names the stretch and the previous reminder, so the reminder and the save commit together and a
    # redo cannot owe the same reminder twice, while `remind` mode still reminds again after each grace.
    previous = booking.idle_reminded_at if booking.idle_since == start else None
    reminder = IdleReminder(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                            provider=booking.provider or "", idle_since=start, idle_for=now - start,
                            hourly=_hourly(engine, booking), currency=engine.currency, previous=previous,
                            release_in=grace if engine.policy.idle.action == "release" else None,
                            no_process=rule == NO_PROCESS)
    with engine.db.session() as session:
        tell(engine, reminder, session=session)
        repo.set_fields(booking.id, session=session, idle_since=start, idle_reminded_at=now, idle_rule=rule)
    return booking.with_(idle_since=start, idle_reminded_at=now, idle_rule=rule)


def _act_after_grace(engine: Engine, booking: Booking, start: datetime, now: datetime, rule: str,
                     grace: timedelta) -> Booking:
    if engine.policy.idle.action == "remind":
        return _remind(engine, booking, start, now, rule, grace)
    saved = _hourly(engine, booking) * Decimal(max(0, int((booking.ends_at - now).total_seconds()))) / 3600 \
        if booking.ends_at else Decimal(0)
    reclaimed = IdleReclaimed(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                              saved=saved, currency=engine.currency)
    return finish(engine, booking, ReleaseWhy.IDLE, also=(reclaimed,), idle_for=now - start)


def _clear(engine: Engine, booking: Booking) -> Booking:
    if not (booking.idle_since or booking.idle_reminded_at or booking.idle_kept_since or booking.idle_rule):
        return booking
    with engine.db.session() as session:
        repo.set_fields(booking.id, session=session, idle_since=None, idle_reminded_at=None,
                        idle_kept_since=None, idle_rule=None)
    return booking.with_(idle_since=None, idle_reminded_at=None, idle_kept_since=None, idle_rule=None)


def keep(engine: Engine, booking: Booking) -> None:
    """The owner keeps an idle booking: no more reminders for this idle stretch (told once per stretch)."""
    with engine.db.session() as session:
        repo.set_fields(booking.id, session=session, idle_kept_since=booking.idle_since)
        tell(engine, IdleKept(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                              idle_since=booking.idle_since), session=session)


def snooze(engine: Engine, booking: Booking, period: timedelta = timedelta(hours=1)) -> datetime:
    """Pause idle checks of a booking for `period`; returns until when. A snooze still running (a repeated click,
    a second replica) stands as it is, so it is told once."""
    now = engine.now()
    with engine.db.session() as session:
        current = repo.get_booking(booking.id, session=session) or booking
        if current.idle_since is None and current.snoozed_until and current.snoozed_until > now:
            until = current.snoozed_until
        else:
            until = now + period
            repo.set_fields(booking.id, session=session, snoozed_until=until, idle_reminded_at=None,
                            idle_since=None)
        tell(engine, IdleSnoozed(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                                 until=until), session=session)
    return until
