"""Telemetry roll-ups on real SQLite and PostgreSQL (issue #27): the housekeeping job rolls samples older than what
the idle and health checks read into per-booking, per-GPU, per-interval rows and deletes them, in one transaction
per batch, idempotently; the checks still see their window at full resolution and reports read the roll-ups."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.db import reports as reports_db
from gpubot.db import telemetry as telemetry_repo
from gpubot.db import telemetry_rollups
from gpubot.db.tables.telemetry import TelemetryRollupRow, TelemetrySampleRow
from gpubot.domain.costing import idle_gpu_seconds
from gpubot.domain.model import BookingState
from gpubot.domain.policy import telemetry_lookback
from gpubot.domain.ports import GpuReading
from gpubot.scheduling.lifecycle.housekeeping import housekeep
from sqlmodel import select

from tests.engine_kit import a_booking, make_engine, simulated_policy

STEP = timedelta(seconds=15)  # the agent's interval under the default windows
HOUR = timedelta(hours=1)


@pytest.fixture
def engine(database_url, clock):
    return make_engine(database_url, simulated_policy(retention={"telemetry": "3d", "telemetry_rollup": "5m"}),
                       clock)


def _booking(engine) -> int:
    with engine.db.session() as session:
        return repo.add_booking(a_booking(state=BookingState.ACTIVE, requested_at=engine.now() - 2 * HOUR),
                                session=session).id


def _util(offset: timedelta) -> float:
    """Idle (5 %) for the first 10 minutes of every 20, busy (90 %) the other 10."""
    return 5.0 if offset % timedelta(minutes=20) < timedelta(minutes=10) else 90.0


def _push_hours(engine, booking_id: int, hours: int, gpus: int = 2) -> None:
    """Samples every STEP over the last `hours` (up to now), aligned to the roll-up intervals."""
    start = telemetry_rollups.bucket_of(engine.now() - hours * HOUR, timedelta(minutes=5))
    steps = int((engine.now() - start) / STEP)
    with engine.db.session() as session:
        telemetry_repo.add_readings([
            (booking_id, GpuReading(gpu, _util(i * STEP), 60.0 + gpu + (i % 7), mem_used_mib=1000.0 * (gpu + 1),
                                    processes=i % 3), start + i * STEP)
            for i in range(steps) for gpu in range(gpus)], session=session)


def _rows(engine, table) -> list:
    with engine.db.session() as session:
        return list(session.exec(select(table)).all())


def test_old_samples_become_interval_rows_and_the_checks_window_stays_raw(engine) -> None:
    booking = _booking(engine)
    _push_hours(engine, booking, 1)
    raw = len(_rows(engine, TelemetrySampleRow))
    ran = housekeep(engine)
    cutoff = telemetry_rollups.bucket_of(engine.now() - telemetry_lookback(engine.policy), timedelta(minutes=5))
    left = _rows(engine, TelemetrySampleRow)
    assert left and min(s.at for s in left) >= cutoff, "only what the checks do not read was rolled up"
    with engine.db.session() as session:  # what the idle and health checks read: their whole window, raw
        window = telemetry_repo.samples_of([booking], engine.now() - telemetry_lookback(engine.policy),
                                           session=session)[booking]
    assert len(window) == 2 * int(telemetry_lookback(engine.policy) / STEP)
    rollups = sorted(_rows(engine, TelemetryRollupRow), key=lambda r: (r.bucket, r.gpu_index))
    assert ran["telemetry_rolled_up"] == raw - len(left) == sum(r.samples for r in rollups)
    assert {r.samples for r in rollups} == {20}
    assert len(rollups) == 2 * ((cutoff - rollups[0].bucket) // timedelta(minutes=5))
    first = rollups[0]
    assert first.util_sum / first.util_n == 5.0 and first.util_min == first.util_max == 5.0
    assert first.temp_max == 66.0 and first.mem_sum / first.mem_n == 1000.0
    assert (first.processes_min, first.processes_max) == (0, 2)
    assert first.last_at - first.first_at == 19 * STEP


def test_a_second_run_finds_nothing_and_a_late_sample_merges_exactly(engine) -> None:
    booking = _booking(engine)
    _push_hours(engine, booking, 1, gpus=1)
    housekeep(engine)
    before = {r.bucket: r.samples for r in _rows(engine, TelemetryRollupRow)}
    assert housekeep(engine)["telemetry_rolled_up"] == 0
    assert {r.bucket: r.samples for r in _rows(engine, TelemetryRollupRow)} == before
    oldest = min(before)
    with engine.db.session() as session:  # a push that arrives late, into an interval already rolled up
        telemetry_repo.add_readings([(booking, GpuReading(0, 100.0, 90.0), oldest + timedelta(seconds=7))],
                                    session=session)
    assert housekeep(engine)["telemetry_rolled_up"] == 1
    [merged] = [r for r in _rows(engine, TelemetryRollupRow) if r.bucket == oldest]
    assert merged.samples == 21 and merged.util_max == 100.0 and merged.temp_max == 90.0
    assert merged.util_sum / merged.util_n == pytest.approx((20 * 5.0 + 100.0) / 21)


def test_a_batch_that_fails_leaves_its_samples_and_no_rollup(engine) -> None:
    booking = _booking(engine)
    _push_hours(engine, booking, 1, gpus=1)
    raw = len(_rows(engine, TelemetrySampleRow))
    with pytest.raises(RuntimeError), engine.db.session() as session:
        assert telemetry_rollups.roll_up(engine.now(), timedelta(minutes=5), 100, session=session) == 100
        raise RuntimeError("the process died before the commit")
    assert len(_rows(engine, TelemetrySampleRow)) == raw and not _rows(engine, TelemetryRollupRow)
    assert housekeep(engine, batch=50, max_batches=2)["telemetry_rolled_up"] == 100, "bounded: two batches"
    assert housekeep(engine)["telemetry_rolled_up"] == raw - 100 - len(_rows(engine, TelemetrySampleRow))


def test_reports_read_the_rollups_for_old_periods_with_the_same_idle_time(engine) -> None:
    booking = _booking(engine)
    _push_hours(engine, booking, 2)
    since, until = engine.now() - 2 * HOUR, engine.now()
    gap = engine.policy.health.telemetry_stale_after

    def idle() -> int:
        with engine.db.session() as session:
            readings = reports_db.samples_for([booking], since, until, session=session)[booking]
        return idle_gpu_seconds(readings, engine.policy.idle.util_below, since, until, gap)

    raw_idle = idle()
    assert housekeep(engine)["telemetry_rolled_up"] > 0
    assert _rows(engine, TelemetryRollupRow)
    assert abs(idle() - raw_idle) <= 2 * STEP.total_seconds() * 2, (idle(), raw_idle)
    assert raw_idle > HOUR.total_seconds() * 2 * 0.45  # half of two GPUs' two hours were idle


def test_rollups_older_than_retention_go(engine, clock) -> None:
    booking = _booking(engine)
    _push_hours(engine, booking, 1, gpus=1)
    housekeep(engine)
    assert _rows(engine, TelemetryRollupRow)
    clock.advance(days=4)
    assert housekeep(engine)["telemetry_rollups"] > 0
    assert not _rows(engine, TelemetryRollupRow) and not _rows(engine, TelemetrySampleRow)
