"""GPU health: page on-call when a booked GPU overheats, resolve when it has cooled down, damped
(domain.alerting): a GPU must stay above `max_temp_c` for `for` to page, and below `max_temp_c - hysteresis_c` for
`resolve_for` (and `min_open` after paging) to resolve; a booking pages at most `max_pages_per_hour` times an hour,
further crossings are folded into its alert's details (and its Slack messages updated with the count and the
latest reading). One open alert per booking and GPU (the ledger's open key).

Overheat is the one alert kind that resolves by itself, so the only one that could flap; the others (orphan,
lost instance, provider errors) open once per key and are resolved by people."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from datetime import datetime, timedelta

from gpubot.db import alerts as alert_repo
from gpubot.db import bookings as repo
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.alerting import Verdict, judge
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import Overheat
from gpubot.domain.telemetry import Sample
from gpubot.scheduling.alerts import fold_alert_in, raise_alert, resolve_alert
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.metrics import ALERTS_FOLDED

__all__ = ["check_health", "overheat_key", "overheat_prefix"]

log = logging.getLogger(__name__)

_OVERHEAT = "gpubot:overheat:"
_HOUR = timedelta(hours=1)


def overheat_key(booking_id: int, gpu_index: int) -> str:
    """The stable dedup key of an overheat alert."""
    return f"{overheat_prefix(booking_id)}{gpu_index}"


def overheat_prefix(booking_id: int) -> str:
    """What the overheat alert key of every GPU of a booking starts with."""
    return f"{_OVERHEAT}{booking_id}:"


def check_health(engine: Engine) -> int:
    """Open, fold or resolve overheat alerts from the recent readings; returns how many GPUs have one open."""
    health = engine.policy.health
    now = engine.now()
    with engine.db.session() as session:
        active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
    since = now - max(health.for_, health.resolve_for) - health.telemetry_stale_after
    with engine.db.session() as session:
        recent = telemetry_repo.samples_of([b.id for b in active], since, session=session)
        opened = alert_repo.open_since(_OVERHEAT, session=session)
        paged = Counter(key.rsplit(":", 1)[0] for key in alert_repo.opened_since(_OVERHEAT, now - _HOUR,
                                                                                 session=session))
    return sum(_check(engine, booking, recent[booking.id], opened, paged, now) for booking in active)


def _check(engine: Engine, booking: Booking, samples: list[Sample], opened: dict[str, datetime], paged: Counter,
           now: datetime) -> int:
    health = engine.policy.health
    by_gpu: dict[int, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_gpu[sample.gpu_index].append(sample)
    hot = 0
    for gpu, readings in sorted(by_gpu.items()):
        key = overheat_key(booking.id, gpu)
        known = [s for s in readings if s.temp_c is not None]
        if not known or now - known[-1].at > health.telemetry_stale_after:  # silent: the alert stays as it is
            hot += key in opened
            continue
        verdict = judge([(s.at, s.temp_c) for s in known], health.max_temp_c, health.damping(), now,
                        opened_at=opened.get(key), paged_last_hour=paged[overheat_prefix(booking.id)[:-1]])
        if verdict.action == "open" and _overheat(engine, booking, known[-1], verdict):
            paged[overheat_prefix(booking.id)[:-1]] += 1
            opened[key] = now
        elif verdict.action == "fold" and verdict.since:
            _fold(engine, booking, known[-1], verdict.since)
        elif verdict.action == "resolve" and resolve_alert(
                engine, key, f"{booking.label} GPU {gpu} is back to {known[-1].temp_c:.0f} °C."):
            del opened[key]
        hot += key in opened
    return hot


def _overheat(engine: Engine, booking: Booking, sample: Sample, verdict: Verdict) -> bool:
    limit = engine.policy.health.max_temp_c
    where = f"{booking.provider} {booking.region} ({booking.instance_name})"
    # On-call's summary goes to PagerDuty too: plain words, the owner as a bare id.
    summary = (f"{booking.label} GPU {sample.gpu_index} is at {sample.temp_c:.0f} °C (limit {limit:.0f} °C) on "
               f"{where}, owner {booking.owner}, " +
               ("util unknown (MIG)." if sample.util is None else f"util {sample.util:.0f} %."))
    told = Overheat(to=booking.owner, booking_id=booking.id, gpu=booking.gpu, count=booking.count,
                    temp_c=sample.temp_c or 0.0, gpu_index=sample.gpu_index, limit_c=limit, util=sample.util,
                    provider=booking.provider or "", region=booking.region or "",
                    instance=booking.instance_name or "", at=verdict.since or sample.at)
    return raise_alert(engine, "overheat", overheat_key(booking.id, sample.gpu_index), summary,
                       replace=booking.id, notices=(told,))


def _fold(engine: Engine, booking: Booking, sample: Sample, since: datetime) -> None:
    with engine.db.session() as session:
        row = alert_repo.fold_into(overheat_prefix(booking.id), sample.gpu_index, since, sample.at, sample.temp_c,
                                   session=session)
        if row is not None:  # the alert's messages show the new count and reading: updated, not posted again
            fold_alert_in(engine, row, replace=booking.id, session=session)
    if row is not None:
        ALERTS_FOLDED.labels("overheat").inc()
        log.info("%s GPU %s ran hot again past the cap of %s pages an hour: folded into alert %s",
                 booking.label, sample.gpu_index, engine.policy.health.max_pages_per_hour, row.id)
