"""Booking repository reads that serve whole scheduler passes, on real SQLite and real PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from gpubot.db import bookings as repo
from gpubot.db.tables.bookings import BookingRow
from gpubot.domain.model import Booking, BookingState, Shape

from tests.engine_kit import T0, a_booking, migrated


def _booking(**changes) -> Booking:
    """A queued booking of one A100 for an hour, with `changes`."""
    return a_booking(**{"count": 1, "duration": timedelta(hours=1), "state": BookingState.QUEUED, **changes})


def test_first_of_each_shape_keeps_the_oldest_booking_of_every_distinct_wanted_shape(database_url):
    db = migrated(database_url)
    shapes = [{}, {}, {"count": 2}, {"spot": True}, {"cuda": "12.4"}, {"alternatives": (Shape("h100", 1),)},
              {"gpu": "h100"}, {}, {"cuda": "12.4"}, {"state": BookingState.ACTIVE, "gpu": "l4"},
              {"alternatives": (Shape("h100", 1),)}, {"owner": "UBOB", "project": "llm", "max_price": Decimal("3")}]
    with db.session() as session:
        added = [repo.add_booking(_booking(**changes), session=session) for changes in shapes]
    with db.session() as session:
        firsts = repo.first_of_each_shape([BookingState.QUEUED], session=session)
    assert firsts == [added[i] for i in (0, 2, 3, 4, 5, 6)]
    with db.session() as session:
        assert repo.first_of_each_shape([BookingState.ACTIVE], session=session) == [added[9]]
        assert repo.first_of_each_shape([BookingState.SCHEDULED], session=session) == []


def test_bookings_by_id_reads_many_at_once_and_leaves_out_unknown_ids(database_url):
    db = migrated(database_url)
    rows = [{"owner": "UALICE", "gpu": "a100", "count": 1, "duration_s": 3600, "state": "active", "spot": False,
             "requested_at": T0, "attempt_rounds": 0, "instance_name": f"gpubot-{i}-x"} for i in range(1, 1201)]
    with db.engine.begin() as conn:
        conn.execute(BookingRow.__table__.insert(), rows)
    with db.session() as session:
        found = repo.bookings_by_id([*range(1, 1201), 7, 5000], session=session)
        assert sorted(found) == list(range(1, 1201))  # more ids than one IN list holds, each once
        assert found[1000] == repo.get_booking(1000, session=session)
        assert found[1000].instance_name == "gpubot-1000-x"
        assert repo.bookings_by_id([], session=session) == {}


def test_state_lists_of_any_length_match_exactly_those_states(database_url):
    """The state tests bind a fixed list of parameters (db.core.in_slots): none, some or every state matches just
    the bookings in them, and an UPDATE's allowed states (past the 8 slots of its smallest shape) too."""
    db = migrated(database_url)
    with db.session() as session:
        queued = repo.add_booking(_booking(), session=session)
        repo.add_booking(_booking(state=BookingState.ACTIVE, count=2), session=session)
    every = list(BookingState)
    with db.session() as session:
        assert repo.count_gpus_held(queued.owner, [], session=session) == 0
        assert repo.count_gpus_held(queued.owner, [BookingState.QUEUED], session=session) == 1
        assert repo.count_gpus_held(queued.owner, every, session=session) == 3
        assert not repo.transition(queued.id, [], BookingState.ACQUIRING, session=session)
        others = [state for state in every if state != BookingState.QUEUED]
        assert not repo.transition(queued.id, others, BookingState.ACQUIRING, session=session)
        assert repo.transition_returning(queued.id, others, BookingState.ACQUIRING, session=session) is None
        moved = repo.transition_returning(queued.id, every, BookingState.ACQUIRING, session=session, failure="x")
    assert (moved.state, moved.failure) == (BookingState.ACQUIRING, "x")


def test_list_bookings_reads_only_the_gpu_types_asked_for(database_url):
    db = migrated(database_url)
    with db.session() as session:
        added = [repo.add_booking(_booking(gpu=gpu), session=session) for gpu in ("a100", "h100", "l4", "a100")]
    with db.session() as session:
        assert repo.list_bookings(session=session, gpus={"a100"}) == [added[0], added[3]]
        assert repo.list_bookings(session=session, gpus=["l4", "h100"], states=[BookingState.QUEUED]) == added[1:3]
        assert repo.list_bookings(session=session, gpus=()) == []
        assert repo.list_bookings(session=session) == added
