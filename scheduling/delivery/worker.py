"""The delivery worker: hands owed notices (the outbox) to their channels, apart from the scheduler's jobs.

Jobs only write notices (db.outbox.owe, in the transaction of their state change), so expiry, reclaim and
billing never wait for Slack. This worker claims due rows, delivers each through its channel, and marks a row
delivered only once the channel accepted it: a turn is two transactions whatever its size, the claim and the
record of every row's outcome (a turn that reaches half its lease records as it goes). A channel that cannot
take a notice now gets it again later: after its Retry-After when it said one, else after a backoff that doubles
up to `MAX_BACKOFF`; after `MAX_ATTEMPTS` tries (hours of outage) the row is given up and logged. A worker that
dies mid-delivery, or before its turn is recorded, leaves its claims to run out (`LEASE`); each row is then
delivered by whoever claims it next, told it is in doubt (the dead worker may have sent it), so the channel looks
for it before sending it again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from gpubot.db import bookings as booking_repo
from gpubot.db import outbox
from gpubot.db.faults import log_failure
from gpubot.domain.booking_view import BookingView
from gpubot.domain.model import Booking
from gpubot.domain.notices import Audience, BookingRequested, Notice, TelemetryStale, from_record
from gpubot.domain.ports import Delivery, NoticeChannel
from gpubot.domain.pricing import interval_cost
from gpubot.scheduling.agent import agent_command, agent_launch, issue_agent_token
from gpubot.scheduling.engine import Engine

__all__ = ["FOLLOW_WAIT", "LEASE", "MAX_ATTEMPTS", "MAX_BACKOFF", "deliver_due", "forget_claims", "run_deliveries",
           "views_of"]

log = logging.getLogger(__name__)

LEASE = timedelta(seconds=60)
MAX_ATTEMPTS = 30
MAX_BACKOFF = timedelta(minutes=5)
FOLLOW_WAIT = timedelta(seconds=5)  # how soon a notice waiting for an earlier one looks again


def views_of(engine: Engine, owed: Sequence[outbox.Owed], *, session) -> dict[int, BookingView]:
    """The bookings the claimed notices speak of, as their messages show them, read in the claim's transaction:
    each with the quote it was booked on, what it costs at the price it is billed at (team currency), and the
    booking replacing it, if any (released `health.replace_grace` after it is ready at the latest)."""
    ids = [booking_id for row in owed if (booking_id := getattr(row.notice, "booking_id", None))]
    return {booking_id: _view(engine, booking, quoted, replacement) for booking_id, (booking, quoted, replacement)
            in booking_repo.booking_views(ids, session=session).items()}


def _view(engine: Engine, booking: Booking, quoted: dict | None, replacement: Booking | None) -> BookingView:
    notice = from_record(quoted) if quoted else None
    requested = notice if isinstance(notice, BookingRequested) else None
    replacing = {"replacement": replacement, "replace_grace": engine.policy.health.replace_grace}
    if booking.price_per_gpu_hour is None or not booking.provider:
        return BookingView(booking, requested, currency=engine.currency, **replacing)
    currency = booking.currency or engine.currency
    native = interval_cost(booking.price_per_gpu_hour, booking.count, 0, int(booking.duration.total_seconds()),
                           engine.tiers(booking.provider))
    return BookingView(booking, requested, engine.to_team(booking.price_per_gpu_hour, currency),
                       engine.to_team(native, currency), engine.currency, **replacing)


def forget_claims(engine: Engine) -> int:
    """At start-up of the one process that owns the ledger (SQLite): the claims left are a killed process's, so
    its notices go now rather than when the claims run out."""
    with engine.db.session() as session:
        return outbox.forget_claims(session=session)


def deliver_due(engine: Engine, channels: Mapping[str, NoticeChannel], limit: int = 20,
                key: str | None = None) -> int:
    """Claim up to `limit` due notices (only notice `key`'s when given), deliver each, then record what became of
    them all in one transaction; returns how many were claimed. What the batch needs besides its rows is read in
    the claim's transaction: the bookings its notices speak of (`views_of`), which notices they follow are still
    owed (a row settled in the batch is no longer), and the agent tokens its no-telemetry DMs give."""
    claimed_at = engine.now()
    with engine.db.session() as session:
        owed = outbox.claim(claimed_at, LEASE, limit, session=session, key=key)
        views = views_of(engine, owed, session=session)
        pending = outbox.pending_keys({k for row in owed for k in row.notice.follows}, session=session)
        tokens = _mint_tokens(engine, [row for row in owed if not _waits(row, pending)], session=session)
    outcomes: list[tuple[outbox.Owed, Delivery | None]] = []  # None: postponed, it follows a notice still owed
    for row in owed:
        booking_id = getattr(row.notice, "booking_id", None)
        if _waits(row, pending):  # e.g. an update waits for its message
            outcomes.append((row, None))
            continue
        result = _deliver(engine, channels, row, views.get(booking_id) if booking_id else None, tokens.get(row.id))
        outcomes.append((row, result))
        if _settles(row, result):
            pending.discard((row.channel, row.notice.key))
        if result.status == "accepted" and result.posted and booking_id in views:
            channel, ts = result.posted  # the batch's later notices of this booking update what was posted
            view = views[booking_id]
            views[booking_id] = replace(view, booking=view.booking.with_(channel=channel, message_ts=ts))
        if engine.now() - claimed_at >= LEASE / 2:  # a slow batch records as it goes, well before its claims end
            _settle(engine, outcomes)
            outcomes = []
    _settle(engine, outcomes)
    return len(owed)


def _waits(row: outbox.Owed, pending: set[tuple[str, str]]) -> bool:
    """Whether the row follows a notice still owed on its channel (so it is not handed over this turn)."""
    return any((row.channel, k) in pending for k in row.notice.follows)


def _mint_tokens(engine: Engine, owed: Sequence[outbox.Owed], *, session) -> dict[int, str]:
    """The agent token each no-telemetry DM of the batch gives (row id → token; only its hash is kept), minted in
    the claim's transaction; none when this gpubot serves no agent."""
    if not engine.agent_sha256:
        return {}
    return {row.id: issue_agent_token(row.notice.booking_id, session=session, for_dm=True)
            for row in owed if isinstance(row.notice, TelemetryStale)}


def _deliver(engine: Engine, channels: Mapping[str, NoticeChannel], row: outbox.Owed,
             view: BookingView | None, token: str | None) -> Delivery:
    """Hand the row over with its booking as read at the claim; what the channel made of it."""
    channel = channels.get(row.channel)
    try:
        result = channel.deliver(_with_secrets(engine, row.notice, token), in_doubt=row.in_doubt, booking=view) \
            if channel else Delivery("retry", error=f"no {row.channel} channel")
    except Exception as exc:  # a channel's bug must not stop the others' notices
        log.exception("delivering %s through %s failed", row.notice.key, row.channel)
        result = Delivery("retry", error=type(exc).__name__, maybe_sent=True)
    return result


def _with_secrets(engine: Engine, notice: Notice, token: str | None) -> Notice:
    """The notice as it is handed over: the no-telemetry DM gets the agent line with the token minted for it (or
    one minted now; only its hash is kept), so the outbox never stores a secret and whichever replica delivers can
    give one."""
    if not isinstance(notice, TelemetryStale) or not engine.agent_sha256:  # no agent served: no line to give
        return notice
    if token is None:  # it waited at the claim for a notice the batch then delivered
        with engine.db.session() as session:
            token = issue_agent_token(notice.booking_id, session=session, for_dm=True)
    agent = agent_launch(engine, token)
    return replace(notice, agent_command=agent_command(agent) if agent else "")


def _settles(row: outbox.Owed, result: Delivery) -> bool:
    """Whether `result` settles the row for good (delivered, or given up) rather than leaving it for a retry."""
    return result.status in ("accepted", "refused", "unreachable") or row.attempts + 1 >= MAX_ATTEMPTS


def _settle(engine: Engine, outcomes: Sequence[tuple[outbox.Owed, Delivery | None]]) -> None:
    """Record what became of the turn's rows, in one transaction: until it commits, each row handed over is still
    claimed and `sending`, so a worker that dies first leaves them to be looked for (in doubt), not sent again."""
    if not outcomes:
        return
    now = engine.now()
    with engine.db.session() as session:
        outbox.mark_all_delivered([row.id for row, result in outcomes if result and result.status == "accepted"],
                                  now, session=session)
        for row, result in outcomes:
            if result is None:
                outbox.postpone(row.id, now + FOLLOW_WAIT, session=session)
            elif result.status == "accepted":
                booking_id = getattr(row.notice, "booking_id", None)
                if result.posted and booking_id:  # a new booking's message: where it is, so its updates find it
                    booking_repo.set_message(booking_id, *result.posted, session=session)
            else:
                _settle_undelivered(engine, row, result, now, session=session)


def _settle_undelivered(engine: Engine, row: outbox.Owed, result: Delivery, now: datetime, *, session) -> None:
    """Record a row the channel did not accept: owed to the admins instead, given up, or retried after a wait
    (its Retry-After when it said one, else a backoff doubling per attempt up to `MAX_BACKOFF`)."""
    if result.status == "unreachable" and (copies := _to_admins(engine, row.notice)):
        for copy in copies:  # each admin its own row, so a failure on one never repeats the others
            outbox.owe(copy, now, session=session, channels=(row.channel,))
        outbox.mark_failed(row.id, now, f"told the admins instead: {result.error}", session=session)
    elif _settles(row, result):
        log.warning("notice %s given up on %s: %s", row.notice.key, row.channel, result.error)
        outbox.mark_failed(row.id, now, result.error or "refused", session=session)
    else:
        wait = timedelta(seconds=result.retry_after) if result.retry_after is not None else \
            min(MAX_BACKOFF, timedelta(seconds=2 ** row.attempts))
        outbox.retry_later(row.id, now + wait, result.error, session=session, maybe_sent=result.maybe_sent)


def _to_admins(engine: Engine, notice: Notice) -> list[Notice]:
    """A channel's notice readdressed to each admin by DM, when its channel is gone; none for a copy that already
    went to an admin."""
    admins = engine.policy.team.admins
    if notice.audience is not Audience.CHANNEL or getattr(notice, "channel", "") in admins:
        return []
    return [replace(notice, channel=admin) for admin in dict.fromkeys(admins)]  # type: ignore[type-var]


def run_deliveries(engine: Engine, channels: Mapping[str, NoticeChannel], stop: threading.Event,
                   interval: float = 0.5) -> None:
    """Deliver until `stop` is set: straight on while notices are due, else every `interval` seconds."""
    while not stop.is_set():
        try:
            busy = deliver_due(engine, channels)
        except Exception as exc:  # the database away for a moment: try again next turn
            log_failure(log, exc, "delivery turn failed")
            busy = 0
        if not busy:
            stop.wait(interval)
