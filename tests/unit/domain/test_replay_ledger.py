"""The team's own bookings and telemetry as a replay trace."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.domain.model import Booking, BookingState
from gpubot.domain.replay_ledger import ledger_trace

T0 = datetime(2026, 11, 1, tzinfo=UTC)
M = timedelta(minutes=1)


def _booking(booking_id: int, asked: timedelta, started: timedelta | None, released: timedelta | None,
             **fields) -> Booking:
    return Booking(booking_id, "alice", "a100", 2, timedelta(hours=4), BookingState.RELEASED, T0 + asked,
                   project="nlp", started_at=T0 + started if started is not None else None,
                   released_at=T0 + released if released is not None else None, **fields)


def test_work_ends_after_the_last_busy_minute_and_telemetry_becomes_utilisation():
    booking = _booking(7, 10 * M, 12 * M, 132 * M)
    samples = {7: [(0, 90.0, T0 + 12 * M), (1, 70.0, T0 + 12 * M + timedelta(seconds=20)),
                   (0, 85.0, T0 + 72 * M), (1, 95.0, T0 + 72 * M), (0, 2.0, T0 + 73 * M), (1, 0.0, T0 + 73 * M)]}
    jobs, util = ledger_trace([booking], samples, T0, T0 + timedelta(days=30), busy_from=15)
    (job,) = jobs
    assert (job.key, job.submit_s, job.gpus, job.gpu_type, job.user, job.project) == ("#7", 600, 2, "a100",
                                                                                        "alice", "nlp")
    assert job.duration_s == 61 * 60  # the busy minute at +60 min, and that minute itself
    assert util["#7"] == [(0, 80.0), (3600, 90.0), (3660, 1.0)]


def test_without_telemetry_a_booking_worked_while_held_and_one_that_never_ran_is_no_job():
    held = _booking(1, 0 * M, 5 * M, 65 * M)
    never = _booking(2, 0 * M, None, None)
    before = _booking(3, -10 * M, 0 * M, 30 * M)
    running = _booking(4, 20 * M, 20 * M, None, ends_at=T0 + 600 * M)
    jobs, util = ledger_trace([held, never, before, running], {}, T0, T0 + 120 * M, busy_from=15)
    assert [(j.key, j.duration_s) for j in jobs] == [("#1", 3600), ("#4", 100 * 60)]  # cut at the period's end
    assert util == {}
