"""A replacement that ends before it lands, whichever way (scheduling.delivery.move_booking): the booking it was to
replace is owed a redraw of its message, no longer being replaced, naming how the replacement ended. Through the
real use cases on SQLite and PostgreSQL; the e2e test (tests/e2e/test_replace_ends_first.py) covers the give-up and
the cancel over signed HTTP."""

from __future__ import annotations

import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.notices import BookingProgress, ReleaseWhy, StepKind
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.booking import cancel
from gpubot.scheduling.desk.approvals import deny
from gpubot.scheduling.money.billing import finish

from tests.engine_kit import a_booking, deliver, make_engine, running_booking, simulated_policy


@pytest.fixture
def engine(database_url, clock):
    return make_engine(database_url, simulated_policy(), clock)


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


# Each way a replacement that is still waiting can end: (its state then, the use case, who acts).
WAITING_ENDS = {"cancelled by its owner": (BookingState.QUEUED, cancel, "UALICE"),
                "denied by an admin": (BookingState.AWAITING_APPROVAL, deny, "UADMIN")}


@pytest.mark.parametrize("how", WAITING_ENDS)
def test_a_waiting_replacement_that_ends_redraws_the_booking_it_was_to_replace(engine, how):
    waiting, end, actor = WAITING_ENDS[how]
    hot = running_booking(engine)
    new = _replacement(engine, hot, waiting)
    _redraws_of(engine, hot)
    end(engine, new.id, actor)
    assert _redraws_of(engine, hot) == ["cancelled"]


def test_a_replacement_released_before_the_booking_it_replaces_redraws_it(engine):
    hot = running_booking(engine)
    new = acquire(engine, _replacement(engine, hot, BookingState.REQUESTED).id)
    assert new.state == BookingState.ACTIVE
    _redraws_of(engine, hot)
    finish(engine, new, ReleaseWhy.RELEASED)
    assert _redraws_of(engine, hot) == ["released"]


def test_a_replacement_that_never_ends_owes_no_redraw(engine):
    hot = running_booking(engine)
    _replacement(engine, hot, BookingState.QUEUED)
    assert _redraws_of(engine, hot) == []
