"""Reconciliation: make the clouds and the ledger agree after a crash, or every few minutes.

Every instance we launch is named `gpubot-<booking>-<nonce>`. An instance whose booking is booting or active
under that name is kept; one whose booking is still acquiring with a matching launch intent is adopted as
booting (the follower job finds out whether it is reachable yet, and DMs its owner then) — unless it has no
instance id (its making was cut short: a Terraform apply killed mid-way), which is destroyed as an orphan and its
booking requeued; one we terminated
ourselves (its intent says so) is a stale listing and terminated again, quietly; any other is an orphan: it is
terminated, billed to its booking from its intent, and on-call is told. At start-up every ready DM still owed is
sent (scheduling.readiness).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.db import ledger
from gpubot.domain.errors import ProviderError
from gpubot.domain.model import ACTIVE_STATES, Booking, BookingState, Instance, parse_instance_tag
from gpubot.domain.notices import ProgressStep, ReleaseWhy, StepKind
from gpubot.domain.queued_billing import end_at_launch
from gpubot.domain.spot import PREEMPTED
from gpubot.scheduling.acquisition.preemption import settle_preempted
from gpubot.scheduling.acquisition.readiness import deliver_owed
from gpubot.scheduling.alerts import raise_alert
from gpubot.scheduling.delivery import show_progress
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.billing import accrue_all, bill_from, finish

__all__ = ["ReconcileReport", "reconcile"]

log = logging.getLogger(__name__)


@dataclass
class ReconcileReport:
    """What a reconciliation pass found and did."""

    kept: int = 0
    adopted: int = 0
    orphans: list[str] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    preempted: list[int] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)


def reconcile(engine: Engine, exclusive: bool = False) -> ReconcileReport:
    """One pass over every provider and every booking that should have, or might have, an instance.

    `exclusive` means no other process can be acquiring right now (a single process at start-up), so every
    booking left `acquiring` is requeued at once; otherwise only those whose acquisition lease expired.
    """
    report = ReconcileReport()
    listed_at = engine.now()
    live: dict[str, Instance] = {}
    for name, provider in engine.providers.items():
        try:
            live.update({i.name: i for i in provider.list_owned()})
        except ProviderError as exc:
            report.unreachable.append(name)
            log.warning("reconcile: cannot list %s: %s", name, exc)
    _settle_preempted(engine, live, report)
    _destroy_unfinished(engine, live, report, exclusive)
    running = _running_as_listed(engine, live)
    for instance in live.values():
        if instance.name in running:
            report.kept += 1  # a release interrupted before the provider ended it is finished by _settle_bookings
        else:
            _settle_instance(engine, instance, report)
    _settle_bookings(engine, live, report, exclusive, listed_at)
    if exclusive:
        deliver_owed(engine, exclusive=True)
    return report


def _settle_preempted(engine: Engine, live: dict[str, Instance], report: ReconcileReport) -> None:
    """Machines their provider took back are settled as preemptions (scheduling.preemption), not as lost."""
    for name, booking_id in settle_preempted(engine, live).items():
        del live[name]
        report.preempted.append(booking_id)


def _destroy_unfinished(engine: Engine, live: dict[str, Instance], report: ReconcileReport, exclusive: bool) -> None:
    """A listed instance with no id is one whose making was cut short (a Terraform apply killed with gpubot): no
    booking can follow it, so once no process may still be making it (`exclusive`, or its booking's acquisition
    lease has passed) it is destroyed as an orphan and its booking, no longer launched, is requeued. One a running
    booking holds under that name (its state unreadable for a moment) is left to that booking."""
    unfinished = {name: i for name, i in live.items() if not i.instance_id and i.status not in ("pending", PREEMPTED)}
    if not unfinished:
        return
    unfinished = {name: i for name, i in unfinished.items() if name not in _running_as_listed(engine, unfinished)}
    with engine.db.session() as session:
        leases = repo.leases(session=session)
    for name, instance in unfinished.items():
        tag = parse_instance_tag(name)
        lease = leases.get(tag[0]) if tag else None
        if exclusive or lease is None or lease < engine.now():
            with engine.db.session() as session:
                booking = repo.get_booking(tag[0], session=session) if tag else None
                intent = attempt_repo.intents_by_name([name], session=session).get(name)
            _terminate_orphan(engine, booking, instance, intent)
            report.orphans.append(name)
            del live[name]


def _running_as_listed(engine: Engine, live: dict[str, Instance]) -> set[str]:
    """Names of the listed instances whose booking is running under that very name, read in one pass.

    Such an instance needs nothing (its booking keeps that name until it is released), and at 10,000 bookings
    two queries per instance were a third of the pass (bench P4); every other one is settled on fresh reads.
    """
    tags = {name: tag[0] for name, tag in ((name, parse_instance_tag(name)) for name in live) if tag}
    with engine.db.session() as session:
        bookings = repo.bookings_by_id(tags.values(), session=session)
    return {name for name, booking_id in tags.items() if (booking := bookings.get(booking_id))
            and booking.state in ACTIVE_STATES and booking.instance_name == name}


def _settle_instance(engine: Engine, instance: Instance, report: ReconcileReport) -> None:
    tag = parse_instance_tag(instance.name)
    if tag is None:
        return
    with engine.db.session() as session:
        booking = repo.get_booking(tag[0], session=session)
        intent = attempt_repo.intents_by_name([instance.name], session=session).get(instance.name)
    if booking and booking.state in ACTIVE_STATES and booking.instance_name == instance.name:
        report.kept += 1  # a release interrupted before the provider ended it is finished by _settle_bookings
    elif booking and booking.state == BookingState.RELEASED and booking.instance_name == instance.name:
        return  # released (terminated and billed) after this pass listed it: the listing is stale, not an orphan
    elif intent is not None and intent.state == "terminated":
        _terminate_again(engine, instance)  # terminated and billed by us (a machine that never became ready)
    elif booking and booking.state == BookingState.ACQUIRING and intent is not None:
        _adopt(engine, booking, instance, intent)
        report.adopted += 1
    else:
        _terminate_orphan(engine, booking, instance, intent)
        report.orphans.append(instance.name)


def _adopt(engine: Engine, booking: Booking, instance: Instance, intent) -> None:
    """A launch whose answer was lost: the booking takes the instance as booting (billed from the intent), and
    the follower polls it at once."""
    with engine.db.session() as session:
        attempt_repo.complete_intent(instance.name, "launched", engine.now(), session=session,
                                     instance_id=instance.instance_id)
        repo.transition(booking.id, [BookingState.ACQUIRING], BookingState.BOOTING, session=session,
                        provider=intent.provider, region=intent.region, instance_id=instance.instance_id,
                        instance_name=instance.name, price_per_gpu_hour=intent.price_per_gpu_hour,
                        currency=intent.currency, started_at=intent.created_at,
                        ends_at=end_at_launch(intent.created_at, booking.duration,
                                              engine.bills_while_queued(intent.provider)),
                        connect=None, ready_at=None, boot_polls=0,
                        next_attempt_at=engine.now())
        adopted = repo.get_booking(booking.id, session=session)
    show_progress(engine, adopted, [ProgressStep(StepKind.RECOVERED)])


def _terminate_again(engine: Engine, instance: Instance) -> None:
    try:
        engine.providers[instance.provider].terminate(instance)
    except ProviderError as exc:
        log.warning("reconcile: terminate of %s (terminated before) failed: %s", instance.name, exc)


def _terminate_orphan(engine: Engine, booking: Booking | None, instance: Instance, intent) -> None:
    try:
        engine.providers[instance.provider].terminate(instance)
    except ProviderError as exc:
        log.warning("reconcile: terminate of orphan %s failed: %s", instance.name, exc)
        return
    now = engine.now()
    if booking and intent is not None and intent.price_per_gpu_hour is not None:
        billed = booking.with_(provider=intent.provider, instance_name=instance.name,
                               price_per_gpu_hour=intent.price_per_gpu_hour, currency=intent.currency)
        with engine.db.session() as session:
            ledger.append_interval(billed, intent.created_at, now, session=session, note="orphan")
            attempt_repo.complete_intent(instance.name, "terminated", now, session=session)
    raise_alert(engine, "orphan", f"gpubot:orphan:{instance.name}",
                          f"Orphan instance {instance.name} on {instance.provider} was terminated "
                          f"(booking {'#' + str(booking.id) if booking else 'unknown'}).", severity="warning")


def _settle_bookings(engine: Engine, live: dict[str, Instance], report: ReconcileReport, exclusive: bool,
                     listed_at) -> None:
    with engine.db.session() as session:
        stale = repo.list_bookings(session=session, states=[BookingState.ACQUIRING, BookingState.BOOTING,
                                                           BookingState.ACTIVE, BookingState.RELEASING])
        leases = repo.leases(session=session)
    launched = {tag[0] for tag in map(parse_instance_tag, live) if tag}
    running = []
    for booking in stale:
        if booking.state == BookingState.ACQUIRING:
            if booking.id not in launched and (exclusive or leases.get(booking.id, engine.now()) < engine.now()):
                _requeue(engine, booking)
                report.requeued.append(booking.id)
        elif booking.state == BookingState.RELEASING:
            gone = booking.instance_name not in live and booking.provider not in report.unreachable
            finish(engine, booking, ReleaseWhy.RESTARTED, booking.released_at if gone else None)
        elif booking.instance_name not in live and booking.provider not in report.unreachable and \
                (booking.started_at or listed_at) < listed_at:
            _vanished(engine, booking, report)
        else:
            running.append(booking)  # booting or active, and listed (or its provider could not be asked)
    accrue_all(engine, running)


def _vanished(engine: Engine, booking: Booking, report: ReconcileReport) -> None:
    """A booking's instance is not listed any more: an active one is lost; a booting one is polled at once, and
    the follower (the one owner of booting machines) gives up on it and goes on placing the booking."""
    if booking.state == BookingState.BOOTING:
        with engine.db.session() as session:
            repo.set_fields(booking.id, session=session, next_attempt_at=engine.now())
        return
    _lost(engine, booking)
    report.lost.append(booking.id)


def _requeue(engine: Engine, booking: Booking) -> None:
    with engine.db.session() as session:
        repo.transition(booking.id, [BookingState.ACQUIRING], BookingState.QUEUED, session=session,
                        next_attempt_at=engine.now())
    show_progress(engine, booking.with_(state=BookingState.QUEUED), [ProgressStep(StepKind.REQUEUED)])


def _lost(engine: Engine, booking: Booking) -> None:
    """The provider no longer runs an active booking's instance: bill what was seen running and close it.

    When it stopped is unknown; the last time it was seen running is the end of its billed stretches (every
    reconcile bills a live instance up to then), so billing stops there rather than running on to now.
    """
    with engine.db.session() as session:
        seen = bill_from(booking, ledger.billed_until(booking.id, session=session))
        repo.transition(booking.id, [BookingState.ACTIVE], BookingState.RELEASING, session=session,
                        released_at=engine.now())
    finish(engine, booking.with_(state=BookingState.RELEASING), ReleaseWhy.LOST, seen)
    raise_alert(engine, "instance_lost", f"gpubot:lost:{booking.id}",
                          f"{booking.label}'s instance {booking.instance_name} vanished at {booking.provider}.",
                          severity="warning")
