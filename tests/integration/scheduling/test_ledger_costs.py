"""The ledger priced in SQL (sums of whole seconds and of seconds past each tier threshold) equals pricing every
stretch one by one, on SQLite and PostgreSQL: tiers, stretches crossing period and day bounds (a DST day too),
pool machines' fees, another currency, stretches of unknown offset, and periods priced again incrementally."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import pairwise

import pytest
from gpubot.db import bookings as repo
from gpubot.db import ledger, ledger_window
from gpubot.db.tables.billing import UsageIntervalRow
from gpubot.domain.costing import clip, pool_shares
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.money import CENT
from gpubot.domain.pricing import interval_cost, tier_thresholds
from gpubot.scheduling.money.digest import day_bounds
from gpubot.scheduling.money.ledger_costs import cost_items, months_between, spend_per_period, spend_totals
from sqlmodel import select

from tests.engine_kit import make_engine, simulated_policy

ULP = Decimal("1e-18")
START = datetime(2026, 10, 1, tzinfo=UTC)
PROVIDERS = {
    "b": {"kind": "simulated", "discounts": [{"after": "4h", "percent": 10}, {"after": "10h", "percent": 25}]},
    "yuan": {"kind": "simulated", "currency": "CNY", "discounts": [{"after": "2h", "percent": 5}]},
    "lab": {"kind": "pool", "machines": [{"host": "box1", "gpu": "a100", "gpus": 8, "monthly_cost": 3000},
                                         {"host": "box2", "gpu": "a100", "gpus": 4, "monthly_cost": 650}]},
}
PRICES = {"a": Decimal("1.50"), "b": Decimal("1.80"), "yuan": Decimal("12.50"), "lab": Decimal("0")}


def _engine(database_url, clock):
    policy = simulated_policy(providers=PROVIDERS, fx={"CNY": "0.14"}, team={"timezone": "Europe/Berlin"})
    return make_engine(database_url, policy, clock, providers={})


def _fill(engine, bookings: int = 40, seed: int = 3) -> None:
    """Bookings that started at odd moments (fractions of a second), billed in stretches of 5 min to 3 h."""
    rng = random.Random(seed)
    for i in range(bookings):
        provider = sorted(PRICES)[i % len(PRICES)]
        started = START + timedelta(seconds=rng.randrange(0, 40 * 86400), microseconds=rng.randrange(10**6))
        booking = Booking(id=0, owner=f"U{i % 7}", project=f"p{i % 3}" if i % 4 else None, gpu="a100",
                          count=rng.choice((1, 2, 4)), duration=timedelta(days=2), state=BookingState.RELEASED,
                          requested_at=started, provider=provider, instance_name=f"gpubot-{i}",
                          instance_id=f"box{1 + i % 2}/{i}" if provider == "lab" else f"i-{i}",
                          price_per_gpu_hour=PRICES[provider], currency="CNY" if provider == "yuan" else "USD",
                          started_at=started)
        with engine.db.session() as session:
            booking = booking.with_(id=repo.add_booking(booking, session=session).id)
            cursor = started
            for _ in range(rng.randint(1, 12)):
                end = cursor + timedelta(seconds=rng.randrange(300, 3 * 3600), microseconds=rng.randrange(10**6))
                ledger.append_interval(booking, cursor, end, session=session)
                cursor = end


def _special(engine) -> None:
    """Tiered stretches ending and starting exactly at local midnight, and one written without its offset (as a
    row from before migration 0002 could be)."""
    midnight = datetime(2026, 10, 10, 22, tzinfo=UTC)  # 11 October, 00:00 in Berlin
    with engine.db.session() as session:
        edge = Booking(id=0, owner="UEDGE", gpu="a100", count=1, duration=timedelta(hours=9),
                       state=BookingState.RELEASED, requested_at=midnight, provider="b", instance_name="edge",
                       price_per_gpu_hour=Decimal("1.80"), currency="USD", started_at=midnight - timedelta(hours=5))
        edge = edge.with_(id=repo.add_booking(edge, session=session).id)
        for start, end in pairwise([midnight - timedelta(hours=5), midnight, midnight + timedelta(hours=7)]):
            ledger.append_interval(edge, start, end, session=session)
        booking = repo.add_booking(Booking(id=0, owner="UOLD", gpu="a100", count=2, duration=timedelta(hours=9),
                                           state=BookingState.RELEASED, requested_at=START, provider="b",
                                           started_at=START + timedelta(days=9)), session=session)
        session.add(UsageIntervalRow(booking_id=booking.id, instance_name="old", owner="UOLD", provider="b",
                                     gpu="a100", count=2, start=START + timedelta(days=9, hours=3),
                                     end=START + timedelta(days=9, hours=8), seconds=5 * 3600,
                                     price_per_gpu_hour=Decimal("1.80"), currency="USD"))


def _by_stretch(engine, since: datetime, until: datetime) -> dict[int, Decimal]:
    """Team-currency cost per booking in [since, until), each stretch priced alone (docs/money.md rules), plus
    pool fees."""
    with engine.db.session() as session:
        rows = session.exec(select(UsageIntervalRow)).all()
        bookings = {b.id: b for b in repo.list_bookings(session=session)}
    cost: dict[int, Decimal] = defaultdict(Decimal)
    used: dict[tuple[str, tuple[datetime, datetime]], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        start, end = _utc(row.start), _utc(row.end)
        if span := clip(start, end, since, until):
            started = bookings[row.booking_id].started_at or start
            offset = max(0, int((span[0] - started).total_seconds()))
            native = interval_cost(Decimal(row.price_per_gpu_hour), row.count, offset,
                                   int((span[1] - span[0]).total_seconds()), engine.tiers(row.provider))
            cost[row.booking_id] += engine.to_team(native, row.currency)
        for month in months_between(engine, since, until) if row.provider == "lab" else []:
            if part := clip(start, end, *clip(since, until, *month)):
                host = bookings[row.booking_id].instance_id.split("/")[0]
                used[(host, month)][row.booking_id] += int((part[1] - part[0]).total_seconds()) * row.count
    for machine in engine.policy.providers["lab"].machines:
        for month in months_between(engine, since, until):
            shares = pool_shares(machine.monthly_cost, month, clip(since, until, *month), used[(machine.host, month)])
            for booking_id, share in shares.items():
                cost[booking_id] += share
    return dict(cost)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _summed(engine, since: datetime, until: datetime) -> dict[int, Decimal]:
    engine.forget()
    with engine.db.session() as session:
        items = cost_items(engine, since, until, session=session)
    cost: dict[int, Decimal] = defaultdict(Decimal)
    for item in items:
        cost[item.booking_id] += item.amount
    return dict(cost)


def _same(ours: dict[int, Decimal], reference: dict[int, Decimal]) -> None:
    assert set(ours) == {b for b, amount in reference.items() if amount or b in ours}
    for booking_id, amount in reference.items():
        assert abs(ours.get(booking_id, Decimal(0)) - amount) <= ULP, booking_id
    assert sum(ours.values()).quantize(CENT) == sum(reference.values()).quantize(CENT)


PERIODS = [
    (datetime(2026, 9, 30, 22, tzinfo=UTC), datetime(2026, 10, 31, 23, tzinfo=UTC)),  # October in Berlin
    (datetime(2026, 10, 24, 22, tzinfo=UTC), datetime(2026, 10, 25, 23, tzinfo=UTC)),  # its 25-hour day
    (datetime(2026, 10, 3, 10, 17, 31, 500_000, tzinfo=UTC), datetime(2026, 10, 20, 4, tzinfo=UTC)),
    (datetime(2026, 10, 20, tzinfo=UTC), datetime(2026, 11, 10, tzinfo=UTC)),  # two months of pool fees
]


@pytest.mark.parametrize("period", PERIODS, ids=["month", "dst-day", "odd-bounds", "two-months"])
def test_costs_summed_in_sql_equal_each_stretch_priced_alone(database_url, clock, period):
    engine = _engine(database_url, clock)
    _fill(engine)
    _special(engine)
    _same(_summed(engine, *period), _by_stretch(engine, *period))


def test_tiered_stretches_are_summed_in_sql_and_only_the_rest_read_one_by_one(database_url, clock):
    engine = _engine(database_url, clock)
    _fill(engine)
    _special(engine)
    days = [day_bounds(engine, (START + timedelta(days=d)).date())[0] for d in range(32)]
    with engine.db.session() as session:
        groups = ledger_window.usage_groups(session=session, bounds=days, exclude={"lab"}, thresholds=[4 * 3600])
        edges = ledger_window.edge_rows(session=session, bounds=days, include={"lab"})
        overlapping = ledger_window.ledger_rows(session=session, since=days[0], until=days[-1])
    assert {g.provider for g in groups} == {"a", "b", "yuan"}
    crossing = {r.id for r in overlapping if any(r.start < b < r.end for b in days)}
    assert {r.id for r in edges} == crossing | {r.id for r in overlapping if r.provider == "lab" or r.owner == "UOLD"}
    assert sum(g.rows for g in groups) + len(edges) == len(overlapping)
    assert crossing and any(g.beyond[4 * 3600] for g in groups if g.provider == "b")
    assert tier_thresholds(engine.tiers("b")) == [4 * 3600, 10 * 3600]


def test_each_days_spend_in_one_pass_equals_a_report_of_that_day(database_url, clock):
    engine = _engine(database_url, clock)
    _fill(engine)
    _special(engine)
    days = [day_bounds(engine, (START + timedelta(days=d)).date())[0] for d in range(-1, 32)]
    with engine.db.session() as session:
        daily = spend_per_period(engine, days, session=session)
    for (since, until), spend in zip(pairwise(days), daily, strict=True):
        report = sum(_summed(engine, since, until).values(), Decimal(0))
        alone = sum(_by_stretch(engine, since, until).values(), Decimal(0))
        assert abs(spend - report) <= ULP * 10 and abs(spend - alone) <= ULP * 10, since
        assert spend.quantize(CENT) == report.quantize(CENT) == alone.quantize(CENT), since
    assert sum(daily) > 0


def test_a_period_priced_again_adds_new_tiered_stretches_exactly(database_url, clock):
    engine = _engine(database_url, clock)
    _fill(engine, bookings=20)
    since, until = PERIODS[0]
    with engine.db.session() as session:
        cost_items(engine, since, until, session=session)  # priced once, remembered
    _fill(engine, bookings=10, seed=4)
    _special(engine)
    with engine.db.session() as session:
        again = cost_items(engine, since, until, session=session)
    incremental: dict[int, Decimal] = defaultdict(Decimal)
    for item in again:
        incremental[item.booking_id] += item.amount
    _same(dict(incremental), _by_stretch(engine, since, until))


def test_spend_totals_kept_up_to_date_equal_the_items_grouped(database_url, clock):
    engine = _engine(database_url, clock)
    _fill(engine, bookings=20)
    since, until = PERIODS[0]
    with engine.db.session() as session:
        first = spend_totals(engine, since, until, session=session)  # priced, summed and remembered
    _fill(engine, bookings=10, seed=4)  # usage and pool stretches added after the sums were kept
    with engine.db.session() as session:
        totals = spend_totals(engine, since, until, session=session)
        items = cost_items(engine, since, until, session=session)
    by_user: dict[str, Decimal] = defaultdict(Decimal)
    by_project: dict[str, Decimal] = defaultdict(Decimal)
    for item in items:
        by_user[item.owner] += item.amount
        by_project[item.project or "(none)"] += item.amount
    # The same sums in another order: equal up to Decimal's 28th digit, to the cent exactly.
    assert abs(totals.team - sum(i.amount for i in items)) <= ULP and totals.team > first.team
    for kept, grouped in ((totals.users, by_user), (totals.projects, by_project)):
        assert kept.keys() == grouped.keys()
        assert all(abs(kept[k] - grouped[k]) <= ULP and kept[k].quantize(CENT) == grouped[k].quantize(CENT)
                   for k in kept)
    assert any(i.kind == "fee" for i in items), "the pool's fee shares are part of the totals"
