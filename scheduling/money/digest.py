"""The daily digest: gather a day's figures from the ledger and tell them (DigestReady) and its chart
(DigestChart), once per day; the bot words and draws them."""

from __future__ import annotations

import calendar
import logging
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as booking_repo
from gpubot.db import effects as effect_repo
from gpubot.db import reports as reports_db
from gpubot.domain.budget import month_bounds, percent
from gpubot.domain.costing import GroupTotal, forecast_month, group_items
from gpubot.domain.model import BookingState
from gpubot.domain.money import format_money
from gpubot.domain.notices import (
    AlertRow,
    AttemptsRow,
    BookingRow,
    CheckRow,
    DigestChart,
    DigestReady,
    GroupRow,
    WasteRow,
)
from gpubot.scheduling.delivery import tell
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.chart import N_, ChartData, spend_chart
from gpubot.scheduling.money.costs import live_items
from gpubot.scheduling.money.ledger_costs import cost_items, spend_per_period, waste_by_booking
from gpubot.scheduling.money.reports import all_scopes

__all__ = ["build_digest", "chart_of", "day_bounds", "digest_chart", "due_day", "run_digest", "send_digest"]

log = logging.getLogger(__name__)

WAITING = (BookingState.REQUESTED, BookingState.AWAITING_APPROVAL, BookingState.SCHEDULED, BookingState.QUEUED,
           BookingState.ACQUIRING)


def day_bounds(engine: Engine, day: date) -> tuple[datetime, datetime]:
    """UTC bounds of a calendar day in the team time zone."""
    start = datetime.combine(day, time(0), tzinfo=engine.team_tz)
    return start.astimezone(UTC), (start + timedelta(days=1)).astimezone(UTC)


def build_digest(engine: Engine, day: date, channel: str = "") -> DigestReady:
    """The digest of `day` for `channel`: its spend by user/project/provider, month to date, waste, bookings,
    failures, alerts and cost disagreements."""
    since, until = day_bounds(engine, day)
    month_start, month_end, label = month_bounds(since, engine.team_tz)
    with engine.db.session() as session:  # one transaction: one snapshot, and no round trips to open others
        # as `gpubot report cost` sums the same period: the ledger, plus what running bookings cost since their
        # last accrual, so that both say the same to the cent
        items = cost_items(engine, since, until, session=session) + live_items(engine, since, until, session=session)
        waste = waste_by_booking(engine, items, since, until, session=session)
        owners = {i.booking_id: i.owner for i in items}
        failed = _failures(since, until, session)
        attempts = reports_db.failed_attempts_between(since, until, session=session)
        alerts = reports_db.alerts_between(since, until, session=session)
        checks = reports_db.cost_checks_between(since, until, session=session)
        limit = next(limit for scope, _key, limit in all_scopes(engine, session=session) if scope == "team")
        daily = _daily(engine, month_start, until, session)
        active = _active(since, until, session)
        waiting = _waiting(engine, until, session)
    spent = sum(daily, Decimal(0))
    total = next(iter(group_items(items, "team", waste)), _zero())
    by = {by: tuple(GroupRow(row.name, row.spend, row.gpu_hours, row.idle_gpu_hours, row.waste)
                    for row in group_items(items, by, waste)) for by in ("user", "project", "provider")}
    return DigestReady(
        channel=channel, period=day.isoformat(), currency=engine.currency, spent=total.spend,
        gpu_hours=total.gpu_hours, idle_gpu_hours=total.idle_gpu_hours, waste=total.waste, month=label,
        month_spent=spent, month_limit=limit, month_forecast=forecast_month(spent, (month_start, month_end), until),
        daily=tuple(daily), by_user=by["user"], by_project=by["project"], by_provider=by["provider"],
        top_waste=_top_waste(waste, owners), active=active, waiting=waiting, failed=failed,
        attempts=tuple(AttemptsRow(what, n) for what, n in sorted(attempts.items())),
        alerts=tuple(AlertRow(kind, summary) for kind, _severity, summary in alerts),
        cost_checks=tuple(CheckRow(c.booking_id, c.provider, c.basis, c.theirs, c.ours, c.currency, c.diff_percent)
                          for c in checks))


def _zero() -> GroupTotal:
    return GroupTotal("team", Decimal(0), Decimal(0), Decimal(0), Decimal(0))


def _daily(engine: Engine, month_start: datetime, until: datetime, session) -> list[Decimal]:
    """Each day's spend from `month_start` to `until`, in one pass over the ledger."""
    days, cursor = [], month_start.astimezone(engine.team_tz).date()
    while day_bounds(engine, cursor)[0] < until:
        days.append(cursor)
        cursor += timedelta(days=1)
    bounds = [day_bounds(engine, d)[0] for d in [*days, cursor]]
    return list(spend_per_period(engine, bounds, session=session))


def _top_waste(waste: dict[int, tuple[int, Decimal]], owners: dict[int, str], top: int = 5) -> tuple[WasteRow, ...]:
    rows = [WasteRow(b, owners.get(b, "?"), Decimal(s) / 3600, amount) for b, (s, amount) in waste.items()]
    return tuple(sorted(rows, key=lambda w: (-w.waste, w.booking_id))[:top])


def _failures(since: datetime, until: datetime, session) -> tuple[BookingRow, ...]:
    failed = reports_db.failed_bookings_between(since, until, session=session)
    tries = attempt_repo.failed_tries_of([b.id for b in failed], session=session)  # one statement for them all
    return tuple(BookingRow(b.id, b.count, b.gpu, b.owner, b.provider or "", b.state.value, failure=b.failure or "",
                            tried=_tried(tries.get(b.id, []))) for b in failed)


def _tried(tries: list[tuple[str, str, str]], shown: int = 3) -> tuple[tuple[str, str, str], ...]:
    """The last few distinct of a booking's failed attempts (oldest first): (provider, region, outcome kind)."""
    seen: dict[tuple[str, str, str], None] = {}
    for key in tries:
        seen.pop(key, None)
        seen[key] = None
    return tuple(seen)[-shown:]


def _active(since: datetime, until: datetime, session) -> tuple[BookingRow, ...]:
    """The bookings that ran during the day (not those of another day), as they are now."""
    active = reports_db.bookings_running_between(since, until, session=session)
    return tuple(BookingRow(b.id, b.count, b.gpu, b.owner, b.provider or "", b.state, b.ends_at) for b in active)


def _waiting(engine: Engine, until: datetime, session) -> tuple[BookingRow, ...]:
    """The bookings waiting now that were asked for by the day's end (not those asked for after it)."""
    now = engine.now()
    waiting = [b for b in booking_repo.list_bookings(session=session, states=WAITING) if b.requested_at < until]
    return tuple(BookingRow(b.id, b.count, b.gpu, b.owner, b.provider or "", b.state.value,
                            b.start_at if b.state == BookingState.SCHEDULED else None,
                            max(now - b.requested_at, timedelta(0))) for b in waiting)


def chart_of(digest: DigestReady) -> DigestChart:
    """The notice that shares the digest's chart in its channel."""
    return DigestChart(channel=digest.channel, period=digest.period, month=digest.month, currency=digest.currency,
                       month_spent=digest.month_spent, month_limit=digest.month_limit,
                       month_forecast=digest.month_forecast, daily=digest.daily)


_TITLE = N_("Spend {month}: {spent} of {limit} budget ({percent} %), forecast {forecast}")


def digest_chart(digest: DigestReady | DigestChart, gettext: Callable[[str], str] = lambda message: message,
                 money: Callable[[Decimal, str], str] = format_money) -> bytes | None:
    """The digest's chart as PNG bytes (None without matplotlib): the month's spend against budget and forecast,
    in the words `gettext` translates and the money form `money` writes (default: English)."""
    def title(template: str, money: Callable[[Decimal, str], str]) -> str:
        amounts = {key: money(amount, digest.currency) for key, amount in (
            ("spent", digest.month_spent), ("limit", digest.month_limit), ("forecast", digest.month_forecast))}
        return template.format(month=digest.month, percent=percent(digest.month_spent, digest.month_limit),
                               **amounts)

    day = date.fromisoformat(digest.period)
    first = day.replace(day=1)
    daily = [(first + timedelta(days=i), amount) for i, amount in enumerate(digest.daily)]
    days = calendar.monthrange(day.year, day.month)[1]
    return spend_chart(ChartData(daily, digest.month_limit, digest.month_forecast, days,
                                 title(gettext(_TITLE), money), digest.currency, gettext=gettext, money=money,
                                 english_title=title(_TITLE, format_money)))


def due_day(engine: Engine, now: datetime) -> date | None:
    """The day whose digest is due at `now` (yesterday, once the local time has passed digest_at), else None."""
    local = now.astimezone(engine.team_tz)
    if local.time() < engine.policy.team.digest_at:
        return None
    return local.date() - timedelta(days=1)


def send_digest(engine: Engine, day: date) -> bool:
    """Tell the digest of `day` to the digest channel unless it was already told; True when this call did. The
    day's claim and the notice are written in one transaction, so a crash or a second replica never loses or
    repeats it."""
    channel = engine.policy.team.digest_channel
    key = f"digest:{day.isoformat()}"
    if not channel or _claimed(engine, key):
        return False
    digest = build_digest(engine, day, channel)
    with engine.db.session() as session:
        if not effect_repo.claim_effect(key, engine.now(), session=session):
            return False
        tell(engine, digest, session=session)
        if not digest.quiet:  # a quiet day has no chart
            tell(engine, chart_of(digest), session=session)
    log.info("told the digest of %s to %s", day, channel)
    return True


def _claimed(engine: Engine, key: str) -> bool:
    """Whether the digest `key` was told already (read first, so a due day is not built again every tick)."""
    with engine.db.session() as session:
        return effect_repo.is_claimed(key, session=session)


def run_digest(engine: Engine) -> bool:
    """The job: post yesterday's digest once it is due, once across restarts and replicas."""
    day = due_day(engine, engine.now())
    return day is not None and send_digest(engine, day)
