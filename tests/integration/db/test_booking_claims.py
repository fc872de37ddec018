"""Claims on a booking's due work (db.booking_claims), taken once, on real SQLite and real PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from gpubot.db import booking_claims as claims
from gpubot.db import bookings as repo
from gpubot.domain.model import Booking, BookingState

from tests.engine_kit import T0, a_booking, migrated


def _booking(**changes) -> Booking:
    """A queued booking of one A100 for an hour, with `changes`."""
    return a_booking(**{"count": 1, "duration": timedelta(hours=1), "state": BookingState.QUEUED, **changes})


def test_a_due_boot_poll_is_taken_once_and_counted(database_url):
    db = migrated(database_url)
    with db.session() as session:
        booking = repo.add_booking(_booking(state=BookingState.BOOTING), session=session, next_attempt_at=T0)
    later = T0 + timedelta(seconds=10)
    with db.session() as session:
        assert not claims.claim_boot_poll(booking.id, T0 - timedelta(seconds=1), later, session=session), "not due"
        assert claims.claim_boot_poll(booking.id, T0, later, session=session)
        assert not claims.claim_boot_poll(booking.id, T0, later, session=session), "a second replica finds it taken"
    with db.session() as session:
        assert repo.get_booking(booking.id, session=session).boot_polls == 1
        assert repo.list_bookings(session=session, states=[BookingState.BOOTING], due_before=later) != []
        assert repo.list_bookings(session=session, states=[BookingState.BOOTING], due_before=T0) == []


def test_an_owed_ready_dm_is_listed_when_due_and_taken_once(database_url):
    db = migrated(database_url)
    with db.session() as session:
        owed = repo.add_booking(_booking(state=BookingState.ACTIVE), session=session)
        repo.set_fields(owed.id, session=session, ready_dm_due_at=T0)
        sent = repo.add_booking(_booking(state=BookingState.ACTIVE), session=session)
    with db.session() as session:
        assert claims.owed_ready_dms(T0 - timedelta(seconds=1), session=session) == []
        assert [(b.id, due) for b, due in claims.owed_ready_dms(T0, session=session)] == [(owed.id, T0)]
        assert claims.claim_ready_dm(owed.id, T0, T0 + timedelta(minutes=1), session=session)
        assert not claims.claim_ready_dm(owed.id, T0, T0 + timedelta(minutes=1), session=session)
        assert not claims.claim_ready_dm(sent.id, T0, T0 + timedelta(minutes=1), session=session)
