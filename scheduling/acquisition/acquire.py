"""Acquisition: probe every cloud, rank the offers, launch on the best, fall back on a capacity error,
queue with backoff when nothing is free. The failover is this one loop; HTTP retries live in the
adapters' client and queue polling in the scheduler, never nested here.

A spot booking that has found no spot capacity for `[spot] fallback_after` (domain.spot) tries the on-demand offers
in the same round once its spot offers failed; landing on one makes it an on-demand booking billed at that price,
and its owner is told why and at what price (SpotFellBack).

With `[acquire] wait_for_cheaper`, a round first asks whether a cheaper offer is expected free within that wait
(scheduling.acquisition.cheaper); if so the booking stays queued, and takes the best free offer once it is over.

This module is the round (what to try, in which order, and what becomes of a booking no offer placed);
`launch.py` is one launch in it."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from types import SimpleNamespace

from gpubot.db import bookings as repo
from gpubot.domain.cheaper import CheaperWait
from gpubot.domain.model import Booking, BookingState, Offer
from gpubot.domain.notices import BookingGaveUp, ProgressStep, ProviderAlert, StepKind
from gpubot.domain.progress_for_operators import trail_text
from gpubot.domain.spot import FALLBACK_FLOOR
from gpubot.scheduling.acquisition.cheaper import cheaper_step, cheaper_wait
from gpubot.scheduling.acquisition.launch import Blocklist, fallback_limit, try_offer
from gpubot.scheduling.agent import issue_agent_token, mint_agent_token
from gpubot.scheduling.alerts import raise_alert_in
from gpubot.scheduling.booking.launch_options import avoided, booking_requests
from gpubot.scheduling.booking.quotes import fetch_offers, rank_for
from gpubot.scheduling.booking.waits import queued_wait_steps
from gpubot.scheduling.delivery import move_booking, show_progress, tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.holds import recheck_at_launch
from tenacity import wait_random_exponential

__all__ = ["acquire", "continue_acquisition", "next_poll_delay", "ranked_offers"]


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
    return _round(engine, booking, token, Blocklist(), [], decided)


def continue_acquisition(engine: Engine, booking: Booking, skip: tuple[str, str], trail: list[ProgressStep]
                         ) -> Booking:
    """Go on placing a booking whose machine never became reachable (already back to acquiring, under a fresh
    lease): the next offer, never `skip` (provider, region) again in this round; queued or failed as any round."""
    with engine.db.session() as session:
        token = issue_agent_token(booking.id, session=session)
    return _round(engine, booking, token, Blocklist(regions={skip}), trail)


def _round(engine: Engine, booking: Booking, token: str, blocked: Blocklist, trail: list[ProgressStep],
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


def _fallback_due(engine: Engine, booking: Booking) -> bool:
    """Whether a spot booking has waited for spot capacity long enough to launch on demand."""
    if not booking.spot:
        return False
    waited = engine.now() - booking.requested_at
    if engine.policy.spot.fallback_after is None and waited < FALLBACK_FLOOR:
        return False  # never sooner than the floor: spares reading the wait estimate on every early round
    return waited >= fallback_limit(engine, booking)


def _on_demand(engine: Engine, booking: Booking, trail: list[ProgressStep], token: str) -> Booking | None:
    """The round's on-demand offers for a spot booking past its fallback time (budgets re-checked at their prices),
    cached ones first as in any round.

    A spot capacity error blocks nothing on demand, so these start from an empty blocklist."""
    return _placed_on(engine, booking, booking.with_(spot=False), Blocklist(), trail, token)


def _placed_on(engine: Engine, booking: Booking, asked: Booking, blocked: Blocklist, trail: list[ProgressStep],
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


def _first_placed(engine: Engine, booking: Booking, offers: list[Offer], blocked: Blocklist,
                  trail: list[ProgressStep], token: str, holding: Decimal | None = None) -> Booking | None:
    """Launch on the offers in rank order until one places the booking (`holding`: what the round's budget
    re-check holds for it, when it decided)."""
    for offer in offers:
        if not blocked.blocks(offer) and (placed := try_offer(engine, booking, offer, blocked, trail, token,
                                                              holding)):
            return placed
    return None


def ranked_offers(engine: Engine, booking: Booking) -> list[Offer]:
    """The booking's available offers, best first, as its next round would rank them (cached ones when fresh
    enough, else probed)."""
    return _ranked(engine, booking, fresh=False)[0]


def _ranked(engine: Engine, booking: Booking, fresh: bool) -> tuple[list[Offer], bool]:
    """The booking's offers, best first, and whether they all came from the offer cache."""
    requests = booking_requests(engine, booking)  # alternatives: every shape is probed, all ranked together
    results = [fetch_offers(engine, request, fresh=fresh, for_launch=True) for request in requests]
    ranked = rank_for(engine, [o for r in results for o in r.offers], requests[0], avoid=avoided(booking),
                      alternatives=requests[1:])
    return ranked, all(r.cached for r in results)


def _queue_or_fail(engine: Engine, booking: Booking, trail: list[ProgressStep], waiting: CheaperWait | None = None
                   ) -> Booking:
    """Fail a booking past give_up_after, else queue it for its next round (at the latest when its wait for a
    cheaper offer, `waiting`, ends)."""
    now = engine.now()
    waited = now - booking.requested_at
    with engine.db.session() as session:
        if waited >= engine.policy.acquire.give_up_after:
            reason = trail_text(trail) or "no provider had capacity"
            if move_booking(engine, booking, [BookingState.ACQUIRING], BookingState.FAILED, session=session,
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


