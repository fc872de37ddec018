"""Acquisition attempts read for many bookings at once (db.attempts.failed_tries_of), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from gpubot.db import attempts as repo
from gpubot.db import bookings as booking_repo
from gpubot.domain.model import BookingState

from tests.engine_kit import T0, a_booking, migrated


def test_failed_tries_of_many_bookings_keep_each_ones_latest_apart(database_url):
    db = migrated(database_url)
    with db.session() as session:
        first, second, quiet = (booking_repo.add_booking(a_booking(state=BookingState.FAILED), session=session)
                                for _ in range(3))
        at = iter(T0 + timedelta(seconds=i) for i in range(100))
        for provider, outcome in [("a", "no_capacity"), ("b", "launched"), ("c", "quota"), ("a", "auth")]:
            repo.record_attempt(first.id, provider, f"{provider}-1", "a100", outcome, 5, next(at), session=session)
        for _ in range(3):  # the second's three latest: only the last two are failures
            repo.record_attempt(second.id, "d", None, "a100", "no_capacity", 5, next(at), session=session)
        repo.record_attempt(second.id, "e", "e-1", "a100", "launched", 5, next(at), session=session)
        repo.record_attempt(quiet.id, "a", "a-1", "a100", "launched", 5, next(at), session=session)
    with db.session() as session:
        found = repo.failed_tries_of([first.id, second.id, quiet.id], session=session, limit=3)
        assert found == {first.id: [("c", "c-1", "quota"), ("a", "a-1", "auth")],
                         second.id: [("d", "", "no_capacity"), ("d", "", "no_capacity")]}
        assert repo.failed_tries_of([], session=session) == {}
