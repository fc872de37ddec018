"""What a budget check reads (db.held.held_for_budget): the ledger's sums of the untiered placed bookings' seconds
price exactly as domain.commitment prices every row of them (held_bookings), on real SQLite and real PostgreSQL."""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

import pytest
from gpubot.db import bookings as repo
from gpubot.db import held as held_repo
from gpubot.db import ledger
from gpubot.domain.commitment import HELD_STATES, price_held
from gpubot.domain.model import BookingState
from gpubot.domain.pricing import Tier

from tests.engine_kit import T0, a_booking, migrated

TIERED = {"tiered": [Tier(timedelta(hours=1), Decimal(10)), Tier(timedelta(hours=10), Decimal(25))]}
RATES = {"USD": Decimal(1), "EUR": Decimal("1.0825"), "": Decimal(1)}
# Microseconds on both sides of a second's edge: the whole seconds of a difference must truncate as Python's int()
EDGES = [0, 1, 2, 499_999, 500_000, 999_998, 999_999]


def _tiers_of(provider: str | None) -> list[Tier]:
    return TIERED.get(provider or "", [])


def _to_team(amount: Decimal, currency: str) -> Decimal:
    return amount * RATES[currency or ""]


def _moment(rng: random.Random, around_s: int):
    return T0 + timedelta(seconds=rng.randrange(around_s - 7200, around_s + 7200), microseconds=rng.choice(EDGES))


def _add_held(db, rng: random.Random, count: int) -> None:
    """`count` held bookings of every kind a check prices: placed (some billed, some released, some past their end)
    at untiered and tiered prices, and waiting ones holding estimates."""
    with db.session() as session:
        for i in range(count):
            owner, project = rng.choice(["UA", "UB", "UC"]), rng.choice([None, "p", "q"])
            if rng.random() < 0.2:
                repo.add_booking(a_booking(owner=owner, project=project, state=BookingState.QUEUED,
                                           estimate=Decimal(rng.randrange(1, 10_000)) / 100), session=session)
                continue
            started = _moment(rng, 0)
            booking = repo.add_booking(a_booking(
                owner=owner, project=project, count=rng.randrange(1, 9), instance_name=f"i-{i}",
                state=rng.choice([BookingState.ACTIVE, BookingState.RELEASING, BookingState.BOOTING]),
                provider=rng.choice(["flat", "other", "tiered"]), currency=rng.choice(["USD", "EUR", None]),
                price_per_gpu_hour=rng.choice([Decimal("1.99"), Decimal("2.1875"), Decimal("0.333")]),
                started_at=started, ends_at=started + timedelta(seconds=rng.randrange(60, 20_000),
                                                                microseconds=rng.choice(EDGES)),
                released_at=_moment(rng, 9000) if rng.random() < 0.2 else None), session=session)
            billed = started
            for _ in range(rng.randrange(3)):  # stretches already billed, each ending a little later
                end = billed + timedelta(seconds=rng.randrange(1, 3000), microseconds=rng.choice(EDGES))
                ledger.append_interval(booking, billed, end, session=session)
                billed = end


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_sums_price_as_every_row_priced_alone(database_url, seed):
    db, rng = migrated(database_url), random.Random(seed)
    _add_held(db, rng, 60)
    for _ in range(6):  # checks at several moments, some before a booking's last billed stretch ends
        now, since = _moment(rng, 5000), rng.choice([None, _moment(rng, 0), _moment(rng, 3000)])
        with db.session() as session:
            rows = held_repo.held_bookings(HELD_STATES, session=session)
            held, summed = held_repo.held_for_budget(HELD_STATES, TIERED, now, since, session=session)
        assert {h.provider for h in held if h.price_per_gpu_hour is not None} <= {"tiered"}
        assert summed and all(s.provider in {"flat", "other"} for s in summed)
        expected = price_held(rows, now, _tiers_of, _to_team, since)
        assert price_held(held, now, _tiers_of, _to_team, since, summed) == expected


def test_one_booking_left_out_and_none_tiered(database_url):
    db, rng = migrated(database_url), random.Random(7)
    _add_held(db, rng, 20)
    now, since = T0 + timedelta(hours=1, microseconds=999_999), T0 - timedelta(minutes=30)
    with db.session() as session:
        rows = held_repo.held_bookings(HELD_STATES, session=session, excluding=5)
        held, summed = held_repo.held_for_budget(HELD_STATES, [], now, since, session=session, excluding=5)
    assert all(h.price_per_gpu_hour is None for h in held)  # nothing tiered: every placed booking is summed
    untiered = price_held(rows, now, lambda _provider: [], _to_team, since)
    assert price_held(held, now, lambda _provider: [], _to_team, since, summed) == untiered

