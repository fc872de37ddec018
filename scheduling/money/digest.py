"""The daily digest: gather a day's figures from the ledger, post them with a chart once per day."""

from __future__ import annotations

import calendar
import logging
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from gpubot.db import bookings as booking_repo
from gpubot.db import reports as reports_db
from gpubot.domain.budget import month_bounds, percent
from gpubot.domain.costing import GroupTotal, forecast_month, group_items
from gpubot.domain.digest import Digest, WasteLine, digest_text, is_quiet
from gpubot.domain.model import BookingState
from gpubot.domain.money import format_money
from gpubot.domain.report_text import waiting_text
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.effects import once
from gpubot.scheduling.money.chart import ChartData, spend_chart
from gpubot.scheduling.money.ledger_costs import cost_items, spend_per_period, waste_by_booking
from gpubot.scheduling.money.reports import all_scopes

__all__ = ["build_digest", "day_bounds", "digest_chart", "due_day", "post_digest", "run_digest", "send_digest"]

log = logging.getLogger(__name__)

WAITING = (BookingState.REQUESTED, BookingState.AWAITING_APPROVAL, BookingState.SCHEDULED, BookingState.QUEUED,
           BookingState.ACQUIRING)


def day_bounds(engine: Engine, day: date) -> tuple[datetime, datetime]:
    """UTC bounds of a calendar day in the team time zone."""
    start = datetime.combine(day, time(0), tzinfo=engine.team_tz)
    return start.astimezone(UTC), (start + timedelta(days=1)).astimezone(UTC)


def build_digest(engine: Engine, day: date) -> Digest:
    """The digest of `day`: its spend by user/project/provider, month to date, waste, bookings, failures."""
    since, until = day_bounds(engine, day)
    with engine.db.session() as session:
        items = cost_items(engine, since, until, session=session)
        waste = waste_by_booking(engine, items, since, until, session=session)
        owners = {i.booking_id: i.owner for i in items}
        failed = _failures(since, until, session)
        alerts = [f"[{kind}] {summary}" for kind, _sev, summary in reports_db.alerts_between(since, until,
                                                                                                session=session)]
        checks = reports_db.cost_checks_between(since, until, session=session)
        limit = next(limit for scope, _key, limit in all_scopes(engine, session=session) if scope == "team")
    month_start, month_end, label = month_bounds(since, engine.team_tz)
    daily = _daily(engine, month_start, until)
    spent = sum((amount for _d, amount in daily), Decimal(0))
    total = group_items(items, "team", waste)
    return Digest(day=day, currency=engine.currency,
                  by={by: group_items(items, by, waste) for by in ("user", "project", "provider")},
                  total=total[0] if total else _zero(), month_label=label, month_spent=spent, month_limit=limit,
                  month_forecast=forecast_month(spent, (month_start, month_end), until), daily_spend=daily,
                  top_waste=_top_waste(waste, owners), active=_active(engine), queue=_queue(engine),
                  failed=failed, alerts=alerts, cost_checks=checks)


def _zero() -> GroupTotal:
    return GroupTotal("team", Decimal(0), Decimal(0), Decimal(0), Decimal(0))


def _daily(engine: Engine, month_start: datetime, until: datetime) -> list[tuple[date, Decimal]]:
    """Each day's spend from `month_start` to `until`, in one pass over the ledger."""
    days, cursor = [], month_start.astimezone(engine.team_tz).date()
    while day_bounds(engine, cursor)[0] < until:
        days.append(cursor)
        cursor += timedelta(days=1)
    bounds = [day_bounds(engine, d)[0] for d in [*days, cursor]]
    with engine.db.session() as session:
        return list(zip(days, spend_per_period(engine, bounds, session=session), strict=True))


def _top_waste(waste: dict[int, tuple[int, Decimal]], owners: dict[int, str], top: int = 5) -> list[WasteLine]:
    lines = [WasteLine(b, owners.get(b, "?"), Decimal(s) / 3600, amount) for b, (s, amount) in waste.items()]
    return sorted(lines, key=lambda w: (-w.waste, w.booking_id))[:top]


def _failures(since: datetime, until: datetime, session) -> list[str]:
    lines = [f"#{b.id} {b.count}× {b.gpu} for <@{b.owner}>: {b.failure or 'failed'}"
             for b in reports_db.failed_bookings_between(since, until, session=session)]
    attempts = reports_db.failed_attempts_between(since, until, session=session)
    return lines + [f"{what}: {n} attempt{'s' if n != 1 else ''}" for what, n in sorted(attempts.items())]


def _active(engine: Engine) -> list[str]:
    with engine.db.session() as session:
        active = booking_repo.list_bookings(session=session, states=[BookingState.ACTIVE])
    return [f"#{b.id} {b.count}× {b.gpu} on {b.provider} for <@{b.owner}>"
            + (f", until {b.ends_at:%Y-%m-%d %H:%M} UTC" if b.ends_at else "") for b in active]


def _queue(engine: Engine) -> list[str]:
    now = engine.now()
    with engine.db.session() as session:
        waiting = booking_repo.list_bookings(session=session, states=WAITING)
    return [f"#{b.id} {b.count}× {b.gpu} for <@{b.owner}> — {waiting_text(b, now)}" for b in waiting]


def post_digest(engine: Engine, digest: Digest, channel: str) -> None:
    """Post the digest text and upload its chart to `channel`."""
    text = digest_text(digest)
    key = f"digest:{digest.day.isoformat()}"
    engine.notifier.post(channel, text, key=key)
    if is_quiet(digest):
        return
    png = digest_chart(digest)
    if png:
        engine.notifier.upload(channel, f"spend-{digest.day.isoformat()}.png", png,
                               f"Spend {digest.month_label}", f"Daily spend in {digest.month_label} against the "
                               f"budget (through {digest.day:%Y-%m-%d}).", key=key)


def digest_chart(digest: Digest) -> bytes | None:
    """The digest's chart as PNG bytes (None without matplotlib): the month's spend against budget and forecast."""
    money = lambda amount: format_money(amount, digest.currency)  # noqa: E731
    title = (f"Spend {digest.month_label}: {money(digest.month_spent)} of {money(digest.month_limit)} budget "
             f"({percent(digest.month_spent, digest.month_limit)} %), forecast {money(digest.month_forecast)}")
    days = calendar.monthrange(digest.day.year, digest.day.month)[1]
    return spend_chart(ChartData(digest.daily_spend, digest.month_limit, digest.month_forecast, days, title,
                                 digest.currency))


def due_day(engine: Engine, now: datetime) -> date | None:
    """The day whose digest is due at `now` (yesterday, once the local time has passed digest_at), else None."""
    local = now.astimezone(engine.team_tz)
    if local.time() < engine.policy.team.digest_at:
        return None
    return local.date() - timedelta(days=1)


def send_digest(engine: Engine, day: date) -> bool:
    """Post the digest of `day` to the digest channel unless it was already posted; True when this call did."""
    channel = engine.policy.team.digest_channel
    if not channel or not once(engine, f"digest:{day.isoformat()}"):
        return False
    post_digest(engine, build_digest(engine, day), channel)
    log.info("posted the digest of %s to %s", day, channel)
    return True


def run_digest(engine: Engine) -> bool:
    """The job: post yesterday's digest once it is due, once across restarts and replicas."""
    day = due_day(engine, engine.now())
    return day is not None and send_digest(engine, day)
