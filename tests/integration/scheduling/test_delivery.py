"""The outbox and its delivery worker on real SQLite and PostgreSQL: once per key, retries as the channel says,
a dead worker's claim runs out, older booking-message notices give way to the newest."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from gpubot.db import outbox
from gpubot.domain.notices import BookingProgress, ExpiryWarning, ProgressStep, StepKind
from gpubot.domain.ports import Delivery
from gpubot.scheduling.delivery import LEASE, MAX_ATTEMPTS, deliver_due, tell

from tests.engine_kit import make_engine, simulated_policy
from tests.fakes.channel import RecordingChannel


def _warning(booking_id: int = 1, minutes: int = 15) -> ExpiryWarning:
    return ExpiryWarning(to="UALICE", booking_id=booking_id, gpu="a100", count=4, offset=timedelta(minutes=minutes))


@pytest.fixture
def engine(database_url, clock):
    return make_engine(database_url, simulated_policy(), clock)


def _owe(engine, *notices) -> list[bool]:
    with engine.db.session() as session:
        return [tell(engine, n, session=session) for n in notices]


def test_a_notice_owed_twice_is_delivered_once(engine):
    channel = RecordingChannel()
    assert _owe(engine, _warning(), _warning()) == [True, False]
    assert _owe(engine, _warning()) == [False]
    assert deliver_due(engine, {"slack": channel}) == 1
    assert deliver_due(engine, {"slack": channel}) == 0
    assert channel.accepted == [_warning()]


def test_a_notice_owed_in_a_transaction_that_rolls_back_is_not_owed(engine):
    with pytest.raises(RuntimeError), engine.db.session() as session:
        tell(engine, _warning(), session=session)
        raise RuntimeError("the state change failed")
    assert deliver_due(engine, {"slack": RecordingChannel()}) == 0


@pytest.mark.parametrize(("first", "in_doubt"), [(Delivery("retry", error="ReadTimeout", maybe_sent=True), True),
                                                 (Delivery("retry", error="ratelimited"), False)],
                         ids=["timed-out", "said-no"])
def test_a_retry_is_handed_over_in_doubt_only_when_the_channel_may_have_taken_it(engine, clock, first, in_doubt):
    channel = RecordingChannel(first)
    _owe(engine, _warning())
    assert deliver_due(engine, {"slack": channel}) == 1 and channel.in_doubt == []
    channel.answer = Delivery("accepted")
    clock.advance(seconds=10)
    assert deliver_due(engine, {"slack": channel}) == 1
    assert channel.in_doubt == ([_warning()] if in_doubt else [])


def test_a_row_whose_worker_died_is_handed_over_in_doubt_and_settled_rows_are_not(engine, clock):
    channel = RecordingChannel()
    _owe(engine, _warning(1), _warning(2))
    with engine.db.session() as session:
        outbox.claim(clock(), LEASE, 1, session=session)  # the worker dies holding #1's row
    assert deliver_due(engine, {"slack": channel}) == 1 and channel.in_doubt == []  # #2's, never handed over
    clock.advance(seconds=LEASE.total_seconds() + 1)
    assert deliver_due(engine, {"slack": channel}) == 1
    assert channel.in_doubt == [_warning(1)]


def test_retry_after_is_honoured_then_the_notice_goes(engine, clock):
    channel = RecordingChannel(Delivery("retry", retry_after=5, error="ratelimited"))
    _owe(engine, _warning())
    assert deliver_due(engine, {"slack": channel}) == 1
    clock.advance(seconds=4.9)
    assert deliver_due(engine, {"slack": channel}) == 0
    channel.answer = Delivery("accepted")
    clock.advance(seconds=0.1)
    assert deliver_due(engine, {"slack": channel}) == 1
    assert len(channel.tried) == 2 and channel.accepted == [_warning()]


def test_a_refused_notice_is_given_up_and_a_failing_one_after_its_attempts(engine, clock):
    _owe(engine, _warning(1), _warning(2))
    refusing = RecordingChannel(Delivery("refused", error="invalid_blocks"))
    deliver_due(engine, {"slack": refusing}, limit=1)
    failing = RecordingChannel(Delivery("retry", error="fatal_error"))
    for _ in range(MAX_ATTEMPTS + 5):
        deliver_due(engine, {"slack": failing})
        clock.advance(minutes=6)
    assert len(failing.tried) == MAX_ATTEMPTS
    with engine.db.session() as session:
        assert outbox.counts(session=session) == {"pending": 0, "delivered": 0, "failed": 2}


def test_a_claim_of_a_worker_that_died_runs_out_and_the_notice_is_delivered_once(engine, clock):
    _owe(engine, _warning())
    with engine.db.session() as session:
        assert len(outbox.claim(engine.now(), LEASE, 10, session=session)) == 1  # then the worker dies
    channel = RecordingChannel()
    assert deliver_due(engine, {"slack": channel}) == 0
    clock.advance(seconds=LEASE.total_seconds() + 1)
    assert deliver_due(engine, {"slack": channel}) == 1
    assert channel.accepted == [_warning()]


def test_only_the_newest_state_of_a_booking_message_is_sent(engine):
    booting = [ProgressStep(StepKind.BOOTING, provider="a", region="a-1", elapsed=timedelta(minutes=n))
               for n in range(3)]
    steps = [BookingProgress(to="UALICE", booking_id=7, gpu="a100", count=4, step=n, trail=(booting[n],))
             for n in range(3)]
    _owe(engine, *steps)
    channel = RecordingChannel()
    deliver_due(engine, {"slack": channel})
    assert channel.accepted == [steps[-1]]
    with engine.db.session() as session:
        assert outbox.counts(session=session)["delivered"] == 3


def test_replicas_claim_disjoint_notices_on_postgres(engine, database_url):
    if not engine.db.is_postgres:
        pytest.skip("SQLite serialises claimers by its write lock; nothing to skip")
    _owe(engine, *[_warning(n) for n in range(1, 7)])
    claimed: list[list[int]] = []
    first_holds, second_done = threading.Event(), threading.Event()

    def first() -> None:
        with engine.db.session() as session:
            claimed.append([o.id for o in outbox.claim(engine.now(), LEASE, 3, session=session)])
            first_holds.set()
            second_done.wait(10)

    worker = threading.Thread(target=first)
    worker.start()
    first_holds.wait(10)
    with engine.db.session() as session:  # the first claimer has not committed: its rows are locked, skipped
        claimed.append([o.id for o in outbox.claim(engine.now(), LEASE, 10, session=session)])
    second_done.set()
    worker.join()
    assert len(claimed[0]) == 3 and len(claimed[1]) == 3 and not set(claimed[0]) & set(claimed[1])


def test_each_notice_is_handed_its_booking_as_read_with_the_claim_and_a_posted_message_is_recorded(engine):
    from decimal import Decimal

    from gpubot.db import bookings as repo
    from gpubot.domain.model import BookingState
    from gpubot.domain.notices import BookingReady, BookingRequested
    from gpubot.scheduling.booking.booking import BookingAsk
    from gpubot.scheduling.desk.request import request

    booked = request(engine, BookingAsk(owner="UALICE", gpu="a100", count=2, duration=timedelta(hours=3),
                                        channel="CGPU"))
    assert booked.booking.state == BookingState.ACTIVE
    channel = RecordingChannel(post_at=("CGPU", "1700000000.000100"))
    while deliver_due(engine, {"slack": channel}):
        pass
    kinds = [type(notice) for notice in channel.tried]
    assert kinds[0] is BookingRequested and BookingReady in kinds
    first, last = channel.views[0], channel.views[-1]
    assert first.booking.state == BookingState.ACTIVE and first.booking.message_ts is None  # as read with the claim
    assert isinstance(first.quoted, BookingRequested) and first.quoted.hourly == Decimal("1.5")  # the quote's facts
    assert first.hourly == Decimal("1.5") and first.total == Decimal("9.00")  # 2 GPUs × 3 h at its billed price
    assert last.booking.message_ts == "1700000000.000100", "later notices of the batch update what was posted"
    with engine.db.session() as session:
        kept = repo.get_booking(booked.booking.id, session=session)
    assert (kept.channel, kept.message_ts) == ("CGPU", "1700000000.000100")
