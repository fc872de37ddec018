"""One launch of an acquisition round: the offer held against budgets, launched, and what came of it recorded.

Placed, the booking is adopted (booting, or active when the machine is reachable already; billed and counted from
now); refused, the provider's breaker hears it, the round blocks the scope the error names (the offer, its region,
the whole provider: `Blocklist`) and a refused account or quota raises an alert. `fallback_limit` is how long a
spot booking waits for spot capacity before it launches on demand (domain.spot): the round asks it, and a landing
on demand tells the owner it."""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.domain.booting import is_reachable
from gpubot.domain.errors import AuthFailed, ImageRefused, NoCapacity, ProviderError, QuotaExceeded
from gpubot.domain.model import Booking, BookingState, Instance, Offer, instance_tag
from gpubot.domain.notices import ProgressStep, SpotFellBack, StepKind
from gpubot.domain.ports import LaunchSpec
from gpubot.domain.queued_billing import end_at_launch, started_running
from gpubot.domain.spot import fallback_after
from gpubot.scheduling import breakers
from gpubot.scheduling.acquisition.readiness import (
    booting_step,
    observe_boot,
    owe_ready_dm,
    poll_at,
    ready_step,
    ready_values,
)
from gpubot.scheduling.agent import agent_launch
from gpubot.scheduling.alerts import raise_alert
from gpubot.scheduling.booking.launch_options import advice_step, launch_cuda, launch_image
from gpubot.scheduling.booking.waits import expected_wait
from gpubot.scheduling.delivery import move_booking, show_progress, tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.metrics import ACQUISITION_ATTEMPTS, ACQUISITION_SECONDS, PROVIDER_ERRORS, SPOT_FALLBACKS
from gpubot.scheduling.money.holds import hold_offer

__all__ = ["Blocklist", "fallback_limit", "try_offer"]

log = logging.getLogger("gpubot.scheduling.acquisition.acquire")  # the logger operators already filter on

_DETAIL_HEAD, _DETAIL_TAIL = 100, 200  # characters of a provider's own words a booking's message shows


def _shortened(detail: str) -> str:
    """A long message's start (where it is) and end (a tool's output, where the vendor's words are)."""
    if len(detail) <= _DETAIL_HEAD + _DETAIL_TAIL:
        return detail
    return f"{detail[:_DETAIL_HEAD]} … {detail[-_DETAIL_TAIL:]}"


@dataclass
class Blocklist:
    """Scopes found out of capacity during one round: offers, regions of a provider, whole providers."""

    providers: set[str] = field(default_factory=set)
    regions: set[tuple[str, str]] = field(default_factory=set)
    offers: set[tuple[str, str, str]] = field(default_factory=set)

    def blocks(self, offer: Offer) -> bool:
        """Whether `offer` lies in a scope found out of capacity this round."""
        return (offer.provider in self.providers or (offer.provider, offer.region) in self.regions
                or (offer.provider, offer.region, offer.ref) in self.offers)

    def add(self, offer: Offer, error: ProviderError) -> None:
        """Block the scope `error` names for `offer` (its own, its region, else its whole provider)."""
        scope = getattr(error, "scope", "provider") if isinstance(error, NoCapacity | QuotaExceeded) else "provider"
        if scope == "offer":
            self.offers.add((offer.provider, offer.region, offer.ref))
        elif scope == "region":
            self.regions.add((offer.provider, offer.region))
        else:
            self.providers.add(offer.provider)


def fallback_limit(engine: Engine, booking: Booking) -> timedelta:
    """How long this spot booking waits for spot capacity before it launches on demand (domain.spot)."""
    setting = engine.policy.spot.fallback_after
    return fallback_after(setting, None if setting is not None else expected_wait(engine, booking.gpu).at_hour)


def try_offer(engine: Engine, booking: Booking, offer: Offer, blocked: Blocklist, trail: list[ProgressStep],
              token: str, holding: Decimal | None = None) -> Booking | None:
    """`booking` launched on `offer` and adopted, or None: it would pass a budget at that price, or the launch
    failed (recorded, its scope blocked for the round, the step added to `trail`)."""
    where = {"provider": offer.provider, "region": offer.region}
    if not hold_offer(engine, booking, offer, holding):  # at this price it would pass a budget (scheduling.holds)
        trail.append(ProgressStep(StepKind.OVER_BUDGET, **where))
        return None
    name = instance_tag(booking.id, secrets.token_hex(4))
    with engine.db.session() as session:  # the launch intent and its progress line, in one transaction
        show_progress(engine, booking, [*trail, ProgressStep(StepKind.LAUNCHING, **where)], session=session)
        attempt_repo.record_intent(booking.id, offer, name, engine.now(), session=session)
    started = time.monotonic()
    try:
        instance = engine.providers[offer.provider].launch(offer, _spec(engine, offer, booking, name, token))
    except ProviderError as exc:
        breakers.record(engine, offer.provider, exc.kind)
        _record_failure(engine, booking, offer, name, exc, started)
        blocked.add(offer, exc)
        # An error of no known kind is shown in the provider's own words (a Terraform module's first diagnostic).
        trail.append(_failed_step(exc, where))
        if isinstance(exc, AuthFailed | QuotaExceeded):
            _alert_provider(engine, offer.provider, exc)
        return None
    breakers.record(engine, offer.provider, None)
    return _adopt(engine, booking, offer, instance, started, trail)


def _failed_step(exc: ProviderError, where: dict[str, str]) -> ProgressStep:
    """The progress step of a failed launch; a refused image names itself and what is allowed."""
    if isinstance(exc, ImageRefused):
        return ProgressStep(StepKind.LAUNCH_FAILED, outcome=exc.kind, detail=_shortened(exc.image),
                            allowed=exc.allowed, then=exc.what, **where)
    return ProgressStep(StepKind.LAUNCH_FAILED, outcome=exc.kind,
                        detail=_shortened(exc.detail) if exc.kind == ProviderError.kind else "", **where)


def _spec(engine: Engine, offer: Offer, booking: Booking, name: str, token: str) -> LaunchSpec:
    """The user's own start command and the agent to deliver, each adapter shaping them for its platform; the owner
    and booked time, for a provider that holds GPUs for a person (a Slurm job's user and time limit)."""
    config = engine.policy.providers.get(offer.provider)
    return LaunchSpec(booking.id, name, config.start_command if config else None, cuda=launch_cuda(engine, booking),
                      image=launch_image(engine, booking, offer), agent=agent_launch(engine, token),
                      owner=booking.owner, duration=booking.duration)


def _record_failure(engine: Engine, booking: Booking, offer: Offer, name: str, exc: ProviderError,
                    started: float) -> None:
    ACQUISITION_ATTEMPTS.labels(offer.provider, exc.kind).inc()
    PROVIDER_ERRORS.labels(offer.provider, exc.kind).inc()
    # A Transient failure may hide a launch that happened (lost response): the intent stays open
    # so that reconciliation looks for the instance by its name and terminates it.
    state = "intended" if exc.kind == "transient" else "failed"
    with engine.db.session() as session:
        attempt_repo.complete_intent(name, state, engine.now(), session=session)
        attempt_repo.record_attempt(booking.id, offer.provider, offer.region, offer.gpu, exc.kind,
                                    _ms(started), engine.now(), session=session, detail=str(exc))


def _adopt(engine: Engine, booking: Booking, offer: Offer, instance: Instance, started: float,
           trail: list[ProgressStep]) -> Booking | None:
    """Record a launched instance: the booking turns active when it is reachable already, else booting (billed
    from now either way, and the booked time counts from now: what is billed is what was booked)."""
    now = engine.now()
    state, landed, ledger_only = _landing(engine, booking, offer, instance, now)
    placed, advice = booking.with_(state=state, **landed), advice_step(booking, offer)
    notes = (advice,) if advice else ()
    fell_back = fallback_limit(engine, booking) if booking.spot and not offer.spot else None
    with engine.db.session() as session:
        attempt_repo.complete_intent(instance.name, "launched", now, session=session,
                                     instance_id=instance.instance_id)
        attempt_repo.record_attempt(booking.id, offer.provider, offer.region, offer.gpu, "launched",
                                    _ms(started), now, session=session)
        moved = move_booking(engine, booking, [BookingState.ACQUIRING], state, session=session, **landed,
                             **ledger_only)
        current = None if moved else repo.get_booking(booking.id, session=session)
        if moved:
            trail.append(ready_step(placed) if state == BookingState.ACTIVE else booting_step(placed, now, instance))
            show_progress(engine, placed, trail, notes=notes, session=session)
        if moved and fell_back is not None:  # before its ready DM: why it is not the spot machine asked for
            _tell_fell_back(engine, placed, now - booking.requested_at, fell_back, session)
        if moved and state == BookingState.ACTIVE:
            owe_ready_dm(engine, placed, session=session, notes=notes)
    ACQUISITION_ATTEMPTS.labels(offer.provider, "launched").inc()
    if fell_back is not None and current is None:
        SPOT_FALLBACKS.labels(offer.provider).inc()
    if current is not None:
        return _not_adopted(engine, current, offer, instance)
    ACQUISITION_SECONDS.observe((now - booking.requested_at).total_seconds())
    if state == BookingState.ACTIVE:
        observe_boot(placed)
    return placed


def _landing(engine: Engine, booking: Booking, offer: Offer, instance: Instance, now
             ) -> tuple[BookingState, dict, dict]:
    """(state, booking fields, ledger-only fields) of a booking that just launched `instance` on `offer`: billed
    and counted from now, or, on a provider that bills nothing while queued, from when it starts running (now, if
    it is reachable already; domain.queued_billing)."""
    queued_bills = engine.bills_while_queued(offer.provider)
    landed = {"gpu": offer.gpu, "count": offer.count, "spot": offer.spot, "provider": offer.provider,
              "region": offer.region,
              "instance_id": instance.instance_id, "instance_name": instance.name,
              "price_per_gpu_hour": _billed_price(offer, instance), "currency": offer.currency,
              "started_at": now, "ends_at": end_at_launch(now, booking.duration, queued_bills),
              "connect": None, "ready_at": None,
              "boot_polls": 0}
    if is_reachable(instance):
        shown, ledger_only = ready_values(now, instance)
        running = started_running(now, now, booking.duration, None, queued_bills)
        return BookingState.ACTIVE, landed | shown | running, ledger_only
    first_poll = poll_at(engine, booking.with_(started_at=now), now, 0)
    return BookingState.BOOTING, landed, {"next_attempt_at": first_poll}


def _tell_fell_back(engine: Engine, placed: Booking, waited: timedelta, after: timedelta, session) -> None:
    """The owner hears that their spot booking launched on demand, where and at the price its ledger row bills."""
    tell(engine, SpotFellBack(to=placed.owner, booking_id=placed.id, gpu=placed.gpu, count=placed.count,
                              waited=waited, after=after, provider=placed.provider or "",
                              region=placed.region or "", price=placed.price_per_gpu_hour or Decimal(0),
                              currency=placed.currency or engine.currency), session=session)
    log.info("%s found no spot capacity in %s; launched on demand on %s %s", placed.label, waited, placed.provider,
             placed.region)


def _billed_price(offer: Offer, instance: Instance):
    """What the booking is billed per GPU-hour: the price the instance landed at when the adapter knows it (an AWS
    spot instance in a dearer Availability Zone than the offer's cheapest), else the offer's."""
    return instance.extra.get("price_per_gpu_hour") or offer.price_per_gpu_hour


def _not_adopted(engine: Engine, current: Booking, offer: Offer, instance: Instance) -> Booking | None:
    """The booking left `acquiring` while we launched: reconciliation adopted this very instance (keep it), or
    the booking was cancelled (terminate the instance rather than leave it running)."""
    if current.instance_name == instance.name:
        return current
    engine.providers[offer.provider].terminate(instance)
    return None


def _alert_provider(engine: Engine, provider: str, exc: ProviderError) -> None:
    hour = engine.now().strftime("%Y%m%d%H")
    raise_alert(engine, f"provider_{exc.kind}", f"gpubot:provider:{provider}:{exc.kind}:{hour}",
                          f"{provider} refused a launch ({exc.kind}): {exc.detail}", severity="warning")


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
