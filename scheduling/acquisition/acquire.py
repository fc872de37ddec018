"""Acquisition: probe every cloud, rank the offers, launch on the best, fall back on a capacity error,
queue with backoff when nothing is free. The failover is this one loop; HTTP retries live in the
adapters' client and queue polling in the scheduler, never nested here.

A spot booking that has found no spot capacity for `[spot] fallback_after` (domain.spot) tries the on-demand offers
in the same round once its spot offers failed; landing on one makes it an on-demand booking billed at that price,
and its owner is told why and at what price (SpotFellBack).

With `[acquire] wait_for_cheaper`, a round first asks whether a cheaper offer is expected free within that wait
(scheduling.acquisition.cheaper); if so the booking stays queued, and takes the best free offer once it is over."""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from types import SimpleNamespace

from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.domain.booting import is_reachable
from gpubot.domain.cheaper import CheaperWait
from gpubot.domain.errors import AuthFailed, ImageRefused, NoCapacity, ProviderError, QuotaExceeded
from gpubot.domain.model import Booking, BookingState, Instance, Offer, instance_tag
from gpubot.domain.notices import BookingGaveUp, ProgressStep, ProviderAlert, SpotFellBack, StepKind
from gpubot.domain.ports import LaunchSpec
from gpubot.domain.progress_for_operators import trail_text
from gpubot.domain.queued_billing import end_at_launch, started_running
from gpubot.domain.ranking import rank_offers
from gpubot.domain.spot import FALLBACK_FLOOR, fallback_after
from gpubot.scheduling.acquisition import breakers
from gpubot.scheduling.acquisition.cheaper import cheaper_step, cheaper_wait
from gpubot.scheduling.acquisition.readiness import (
    booting_step,
    observe_boot,
    owe_ready_dm,
    poll_at,
    ready_step,
    ready_values,
)
from gpubot.scheduling.booking.launch_options import (
    advice_step,
    avoided,
    booking_requests,
    launch_cuda,
    launch_image,
)
from gpubot.scheduling.booking.quotes import fetch_offers
from gpubot.scheduling.booking.waits import expected_wait, queued_wait_steps
from gpubot.scheduling.delivery import show_progress, tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.agent import agent_launch, issue_agent_token, mint_agent_token
from gpubot.scheduling.lifecycle.alerts import raise_alert, raise_alert_in
from gpubot.scheduling.metrics import ACQUISITION_ATTEMPTS, ACQUISITION_SECONDS, PROVIDER_ERRORS, SPOT_FALLBACKS
from gpubot.scheduling.money.holds import hold_offer, recheck_at_launch
from tenacity import wait_random_exponential

__all__ = ["acquire", "continue_acquisition", "next_poll_delay", "ranked_offers"]

log = logging.getLogger(__name__)

_DETAIL_HEAD, _DETAIL_TAIL = 100, 200  # characters of a provider's own words a booking's message shows


def _shortened(detail: str) -> str:
    """A long message's start (where it is) and end (a tool's output, where the vendor's words are)."""
    if len(detail) <= _DETAIL_HEAD + _DETAIL_TAIL:
        return detail
    return f"{detail[:_DETAIL_HEAD]} … {detail[-_DETAIL_TAIL:]}"


@dataclass
class _Blocklist:
    """Scopes found out of capacity during one round: offers, regions of a provider, whole providers."""

    providers: set[str] = field(default_factory=set)
    regions: set[tuple[str, str]] = field(default_factory=set)
    offers: set[tuple[str, str, str]] = field(default_factory=set)

    def blocks(self, offer: Offer) -> bool:
        return (offer.provider in self.providers or (offer.provider, offer.region) in self.regions
                or (offer.provider, offer.region, offer.ref) in self.offers)

    def add(self, offer: Offer, error: ProviderError) -> None:
        scope = getattr(error, "scope", "provider") if isinstance(error, NoCapacity | QuotaExceeded) else "provider"
        if scope == "offer":
            self.offers.add((offer.provider, offer.region, offer.ref))
        elif scope == "region":
            self.regions.add((offer.provider, offer.region))
        else:
            self.providers.add(offer.provider)


def next_poll_delay(engine: Engine, rounds: int) -> timedelta:
    """Full-jitter exponential delay before the next round of a queued booking."""
    acquire = engine.policy.acquire
    wait = wait_random_exponential(multiplier=acquire.poll_every.total_seconds(),
                                   max=acquire.backoff_max.total_seconds())
    return timedelta(seconds=wait(SimpleNamespace(attempt_number=max(rounds, 1))))


def acquire(engine: Engine, booking_id: int, decided: Decimal | None = None) -> Booking:
    """Try to place a booking now; it ends booting or active, queued for a later round, or failed.

    `decided`: what the booking's own request held against budgets moments ago, in this same call (`start_now`);
    its launch then needs no second budget decision unless the offer costs more than that."""
    token, token_hashed = mint_agent_token()
    with engine.db.session() as session:
        # next_attempt_at doubles as the lease of this acquisition: reconcile requeues only expired ones.
        lease = engine.now() + engine.policy.acquire.lease
        booking = repo.transition_returning(booking_id, [BookingState.REQUESTED, BookingState.QUEUED],
                                            BookingState.ACQUIRING, session=session, next_attempt_at=lease,
                                            agent_token_hash=token_hashed)
        if booking is None:
            return repo.get_booking(booking_id, session=session)
        show_progress(engine, booking, [ProgressStep(StepKind.LOOKING)], session=session)
    return _round(engine, booking, token, _Blocklist(), [], decided)


def continue_acquisition(engine: Engine, booking: Booking, skip: tuple[str, str], trail: list[ProgressStep]
                         ) -> Booking:
    """Go on placing a booking whose machine never became reachable (already back to acquiring, under a fresh
    lease): the next offer, never `skip` (provider, region) again in this round; queued or failed as any round."""
    with engine.db.session() as session:
        token = issue_agent_token(booking.id, session=session)
    return _round(engine, booking, token, _Blocklist(regions={skip}), trail)


def _round(engine: Engine, booking: Booking, token: str, blocked: _Blocklist, trail: list[ProgressStep],
           decided: Decimal | None = None) -> Booking:
    """One acquisition round: launch on the best offer not blocked, falling back down the ranking."""
    # Offers the quote or the availability job probed moments ago (at most acquire.offer_cache old) spare a
    # probe round-trip before the first launch. Only when none of them places the booking are the clouds probed
    # afresh (what failed stays blocked), so a stale cache costs one probe, never a wasted queue round.
    if (waiting := cheaper_wait(engine, booking)) is not None:
        return _queue_or_fail(engine, booking, [*trail, cheaper_step(engine, waiting)], waiting)
    placed = _placed_on(engine, booking, booking, blocked, trail, token, decided)
    if placed is None and _fallback_due(engine, booking):
        placed = _on_demand(engine, booking, trail, token)
    return placed or _queue_or_fail(engine, booking, trail)


def _fallback_limit(engine: Engine, booking: Booking) -> timedelta:
    """How long this spot booking waits for spot capacity before it launches on demand (domain.spot)."""
    setting = engine.policy.spot.fallback_after
    return fallback_after(setting, None if setting is not None else expected_wait(engine, booking.gpu).at_hour)


def _fallback_due(engine: Engine, booking: Booking) -> bool:
    """Whether a spot booking has waited for spot capacity long enough to launch on demand."""
    if not booking.spot:
        return False
    waited = engine.now() - booking.requested_at
    if engine.policy.spot.fallback_after is None and waited < FALLBACK_FLOOR:
        return False  # never sooner than the floor: spares reading the wait estimate on every early round
    return waited >= _fallback_limit(engine, booking)


def _on_demand(engine: Engine, booking: Booking, trail: list[ProgressStep], token: str) -> Booking | None:
    """The round's on-demand offers for a spot booking past its fallback time (budgets re-checked at their prices),
    cached ones first as in any round.

    A spot capacity error blocks nothing on demand, so these start from an empty blocklist."""
    return _placed_on(engine, booking, booking.with_(spot=False), _Blocklist(), trail, token)


def _placed_on(engine: Engine, booking: Booking, asked: Booking, blocked: _Blocklist, trail: list[ProgressStep],
               token: str, decided: Decimal | None = None) -> Booking | None:
    """`booking` launched on the best of the offers for `asked` (its own shape, or its on-demand form), budgets
    re-checked at their prices first: the cached offers, then — only when none placed it — the clouds probed
    afresh (what failed stays blocked). A refusal at the re-check is returned as it stands."""
    offers, cached = _ranked(engine, asked, fresh=False)
    # Budgets may have changed since the booking was decided, unless that was moments ago in this same call.
    stopped, holding = (None, decided) if decided is not None else recheck_at_launch(engine, booking, offers)
    if stopped is not None:
        return stopped
    placed = _first_placed(engine, booking, offers, blocked, trail, token, holding)
    if placed is None and cached:
        placed = _first_placed(engine, booking, _ranked(engine, asked, fresh=True)[0], blocked, trail, token,
                               holding)
    return placed


def _first_placed(engine: Engine, booking: Booking, offers: list[Offer], blocked: _Blocklist,
                  trail: list[ProgressStep], token: str, holding: Decimal | None = None) -> Booking | None:
    """Launch on the offers in rank order until one places the booking (`holding`: what the round's budget
    re-check holds for it, when it decided)."""
    for offer in offers:
        if not blocked.blocks(offer) and (placed := _try_offer(engine, booking, offer, blocked, trail, token,
                                                               holding)):
            return placed
    return None


def ranked_offers(engine: Engine, booking: Booking) -> list[Offer]:
    """The booking's available offers, best first, as its next round would rank them (cached ones when fresh
    enough, else probed)."""
    return _ranked(engine, booking, fresh=False)[0]


def _ranked(engine: Engine, booking: Booking, fresh: bool) -> tuple[list[Offer], bool]:
    """The booking's offers, best first, and whether they all came from the offer cache."""
    acquire_policy = engine.policy.acquire
    requests = booking_requests(engine, booking)  # alternatives: every shape is probed, all ranked together
    results = [fetch_offers(engine, request, fresh=fresh, for_launch=True) for request in requests]
    ranked = rank_offers([o for r in results for o in r.offers], requests[0], strategy=acquire_policy.strategy,
                         order=acquire_policy.order, kind_of=engine.kind_of, team_owned=engine.team_owned,
                         price_in_team=engine.offer_price, avoid=avoided(booking), requests=requests[1:])
    return ranked, all(r.cached for r in results)


def _try_offer(engine: Engine, booking: Booking, offer: Offer, blocked: _Blocklist, trail: list[ProgressStep],
               token: str, holding: Decimal | None = None) -> Booking | None:
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
    fell_back = _fallback_limit(engine, booking) if booking.spot and not offer.spot else None
    with engine.db.session() as session:
        attempt_repo.complete_intent(instance.name, "launched", now, session=session,
                                     instance_id=instance.instance_id)
        attempt_repo.record_attempt(booking.id, offer.provider, offer.region, offer.gpu, "launched",
                                    _ms(started), now, session=session)
        moved = repo.transition(booking.id, [BookingState.ACQUIRING], state, session=session, **landed,
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


def _queue_or_fail(engine: Engine, booking: Booking, trail: list[ProgressStep], waiting: CheaperWait | None = None
                   ) -> Booking:
    """Fail a booking past give_up_after, else queue it for its next round (at the latest when its wait for a
    cheaper offer, `waiting`, ends)."""
    now = engine.now()
    waited = now - booking.requested_at
    with engine.db.session() as session:
        if waited >= engine.policy.acquire.give_up_after:
            reason = trail_text(trail) or "no provider had capacity"
            if repo.transition(booking.id, [BookingState.ACQUIRING], BookingState.FAILED, session=session,
                               failure=reason[:500], released_at=now):
                _tell_given_up(engine, booking, trail, session=session)
        else:
            rounds = repo.rounds_of(booking.id, session=session) + 1
            retry = now + next_poll_delay(engine, rounds)
            repo.transition(booking.id, [BookingState.ACQUIRING], BookingState.QUEUED, session=session,
                            next_attempt_at=min(retry, waiting.until) if waiting else retry, attempt_rounds=rounds)
        current = repo.get_booking(booking.id, session=session)
    if current.state == BookingState.QUEUED:
        notes = [] if waiting else queued_wait_steps(engine, current)  # a wait for cheaper capacity says its own
        show_progress(engine, current, trail, queued=True, notes=notes)
    return current


def _tell_given_up(engine: Engine, booking: Booking, trail: list[ProgressStep], *, session) -> None:
    """The owner (DM and booking message) and on-call hear that acquisition gave up, in its transaction."""
    gave_up = BookingGaveUp(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                            trail=tuple(trail))
    summary = trail_text(trail, " → ") or "no offer matched"
    alert = ProviderAlert(kind="acquisition_failed", alert_key=f"gpubot:acquire:{booking.id}", owner=booking.owner,
                          summary=f"{booking.label} ({booking.count}× {booking.gpu}) gave up after "
                                  f"{engine.policy.acquire.give_up_after}: {summary}")
    if not raise_alert_in(engine, alert, session=session, notices=(gave_up,)):
        tell(engine, gave_up, session=session)


def _alert_provider(engine: Engine, provider: str, exc: ProviderError) -> None:
    hour = engine.now().strftime("%Y%m%d%H")
    raise_alert(engine, f"provider_{exc.kind}", f"gpubot:provider:{provider}:{exc.kind}:{hour}",
                          f"{provider} refused a launch ({exc.kind}): {exc.detail}", severity="warning")


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
