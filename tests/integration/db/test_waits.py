"""What the cheaper-offer forecast reads (db.waits): the usual held share, taken by the database, and the holders
of a GPU type per place, on real SQLite and real PostgreSQL."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.db import waits
from gpubot.domain.model import Booking, BookingState

from tests.engine_kit import T0, a_booking, migrated

SINCE = T0 - timedelta(days=14)


def _released(held: timedelta, booked: timedelta, released_at=T0, **changes) -> Booking:
    return a_booking(state=BookingState.RELEASED, duration=booked, started_at=released_at - held,
                     released_at=released_at, **changes)


def _median(shares: list[float]) -> float:
    """The median as the forecast defines it: each share at most 1, of an even count the upper middle."""
    ordered = sorted(min(share, 1.0) for share in shares)
    return ordered[len(ordered) // 2]


@pytest.mark.parametrize("count", [1, 2, 5, 40])
def test_the_median_held_share_is_the_databases_median_of_the_bookings_released_in_the_window(database_url, count):
    db, rng = migrated(database_url), random.Random(count)
    shapes = [(timedelta(seconds=rng.randrange(60, 40_000), microseconds=rng.randrange(10**6)),
               timedelta(hours=rng.randrange(1, 10))) for _ in range(count)]
    with db.session() as session:
        for held, booked in shapes:
            repo.add_booking(_released(held, booked), session=session)
        # none of these counts: released before the window, never started, booked for nothing, not released
        repo.add_booking(_released(timedelta(hours=1), timedelta(hours=2), released_at=SINCE - timedelta(seconds=1)),
                         session=session)
        repo.add_booking(_released(timedelta(hours=1), timedelta(hours=2)).with_(started_at=None), session=session)
        repo.add_booking(_released(timedelta(hours=1), timedelta(0)), session=session)
        repo.add_booking(a_booking(state=BookingState.ACTIVE, started_at=T0), session=session)
    with db.session() as session:
        median, finished = waits.median_held_share(SINCE, session=session)
    assert finished == count
    assert median == pytest.approx(_median([held / booked for held, booked in shapes]), abs=1e-12)


def test_a_share_past_the_booked_time_counts_as_the_whole_of_it_and_no_release_gives_no_share(database_url):
    db = migrated(database_url)
    with db.session() as session:
        assert waits.median_held_share(SINCE, session=session) == (None, 0)
        repo.add_booking(_released(timedelta(hours=3), timedelta(hours=2)), session=session)  # extended past its slot
    with db.session() as session:
        assert waits.median_held_share(SINCE, session=session) == (1.0, 1)


def test_the_holders_of_a_gpu_type_are_read_per_place_with_what_the_forecast_needs(database_url):
    db = migrated(database_url)
    with db.session() as session:
        west = repo.add_booking(a_booking(state=BookingState.ACTIVE, provider="west", region="w-1", started_at=T0,
                                          ends_at=T0 + timedelta(hours=6), idle_reminded_at=T0, idle_rule="idle"),
                                session=session)
        repo.add_booking(a_booking(state=BookingState.BOOTING, provider="west", region="w-1", count=2,
                                   ends_at=T0 + timedelta(hours=6)), session=session)
        repo.add_booking(a_booking(state=BookingState.RELEASING, provider="east", region="e-1"), session=session)
        repo.add_booking(a_booking(state=BookingState.RELEASED, provider="west", region="w-1"), session=session)
        repo.add_booking(a_booking(state=BookingState.QUEUED), session=session)
        repo.add_booking(a_booking(state=BookingState.ACTIVE, gpu="h100", provider="west", region="w-1"),
                         session=session)
    with db.session() as session:
        held = waits.holders_of({"a100"}, session=session)
        assert waits.holders_of({"v100"}, session=session) == {}
    assert {place: [h.count for h in holders] for place, holders in held.items()} == {
        ("west", "w-1", "a100"): [4, 2], ("east", "e-1", "a100"): [4]}
    first = held["west", "w-1", "a100"][0]
    assert (first.started_at, first.duration, first.ends_at) == (west.started_at, west.duration, west.ends_at)
    assert (first.idle_reminded_at, first.idle_rule, first.idle_kept_since) == (T0, "idle", None)


@pytest.mark.parametrize("micro", [(0, 999_999), (999_999, 0), (999_500, 999_499)])
def test_a_moment_a_microsecond_short_of_a_whole_second_is_read_as_that_second(database_url, micro):
    """SQLite's strftime rounds to the millisecond first: "…:11.999999" read as second 12 put a share off by a
    whole second."""
    db = migrated(database_url)
    started, released = T0 + timedelta(microseconds=micro[0]), T0 + timedelta(hours=1, microseconds=micro[1])
    with db.session() as session:
        repo.add_booking(_released(released - started, timedelta(hours=2), released_at=released), session=session)
    with db.session() as session:
        median, _finished = waits.median_held_share(SINCE, session=session)
    assert median == pytest.approx((released - started) / timedelta(hours=2), abs=1e-12)
