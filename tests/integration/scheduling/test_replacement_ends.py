"""A replacement that ends before it lands, whichever way (scheduling.delivery.move_booking): the booking it was to
replace is owed a redraw of its message, no longer being replaced, naming how the replacement ended. Through the
real use cases on SQLite and PostgreSQL; the e2e test (tests/e2e/test_replace_ends_first.py) covers the give-up and
the cancel over signed HTTP."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import BookingProgress, ReleaseWhy, StepKind
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.booking import BookingAsk, book, cancel
from gpubot.scheduling.desk.approvals import deny
from gpubot.scheduling.money.billing import finish

from tests.engine_kit import a_booking, deliver, make_engine, simulated_policy


@pytest.fixture
def engine(database_url, clock):
    return make_engine(database_url, simulated_policy(), clock)


def _running(engine) -> Booking:
    booked = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=2, duration=timedelta(hours=6)))
    return acquire(engine, booked.booking.id)


def _replacement(engine, hot: Booking, state: BookingState) -> Booking:
    with engine.db.session() as session:
        return repo.add_booking(a_booking(count=2, state=state, replaces=hot.id, requested_at=engine.now()),
                                session=session)


def _redraws_of(engine, hot: Booking) -> list[str]:
    """How the redraws of `hot`'s message owed since the last call say its replacement ended."""
    engine.notifier.notices.clear()
    deliver(engine)
    return [step.then for notice in engine.notifier.notices
            if isinstance(notice, BookingProgress) and notice.booking_id == hot.id
            for step in notice.trail if step.kind == StepKind.REPLACING]


def test_a_cancelled_replacement_redraws_the_booking_it_was_to_replace(engine):
    hot = _running(engine)
    new = _replacement(engine, hot, BookingState.QUEUED)
    _redraws_of(engine, hot)
    cancel(engine, new.id, "UALICE")
    assert _redraws_of(engine, hot) == ["cancelled"]


def test_a_denied_replacement_redraws_the_booking_it_was_to_replace(engine):
    hot = _running(engine)
    new = _replacement(engine, hot, BookingState.AWAITING_APPROVAL)
    _redraws_of(engine, hot)
    deny(engine, new.id, "UADMIN")
    assert _redraws_of(engine, hot) == ["cancelled"]


def test_a_replacement_released_before_the_booking_it_replaces_redraws_it(engine):
    hot = _running(engine)
    new = acquire(engine, _replacement(engine, hot, BookingState.REQUESTED).id)
    assert new.state == BookingState.ACTIVE
    _redraws_of(engine, hot)
    finish(engine, new, ReleaseWhy.RELEASED)
    assert _redraws_of(engine, hot) == ["released"]


def test_a_replacement_that_never_ends_owes_no_redraw(engine):
    hot = _running(engine)
    _replacement(engine, hot, BookingState.QUEUED)
    assert _redraws_of(engine, hot) == []
