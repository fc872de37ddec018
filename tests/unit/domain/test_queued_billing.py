"""When a booking's bill and booked time start (domain.queued_billing): at the launch on a provider that bills while
its machines wait, at the machine's start on one that does not; and how long a booting machine may take."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpubot.domain.commitment import Held, price_held
from gpubot.domain.queued_billing import (
    bill_start,
    boot_deadline,
    end_at_launch,
    started_running,
    waited_too_long,
)

SUBMIT = datetime(2026, 12, 5, 4, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def test_a_cloud_booking_ends_its_duration_after_the_launch_and_is_billed_from_it():
    assert end_at_launch(SUBMIT, HOUR, bills_while_queued=True) == SUBMIT + HOUR
    assert bill_start(SUBMIT, None, bills_while_queued=True) == SUBMIT, "booting is billed on a cloud"
    assert started_running(SUBMIT, SUBMIT + timedelta(minutes=2), HOUR, None, bills_while_queued=True) == {}


def test_a_queued_job_has_no_end_and_no_bill_until_it_starts():
    assert end_at_launch(SUBMIT, HOUR, bills_while_queued=False) is None
    assert bill_start(SUBMIT, None, bills_while_queued=False) is None


def test_a_job_that_starts_after_a_wait_is_billed_and_booked_from_the_providers_start():
    start, seen = SUBMIT + timedelta(minutes=40), SUBMIT + timedelta(minutes=40, seconds=20)
    running = started_running(SUBMIT, seen, HOUR, start, bills_while_queued=False)
    assert running == {"started_at": start, "ends_at": start + HOUR}, "the booked hour is whole, from its start"
    assert bill_start(running["started_at"], seen, bills_while_queued=False) == start


def test_the_providers_start_is_kept_between_the_launch_and_the_moment_it_is_seen():
    seen = SUBMIT + timedelta(seconds=3)
    assert started_running(SUBMIT, seen, HOUR, None, False)["started_at"] == seen, "no start said: seen now"
    early = SUBMIT - timedelta(seconds=0.7)  # Slurm's StartTime is whole seconds: it may read before the submit
    assert started_running(SUBMIT, seen, HOUR, early, False)["started_at"] == SUBMIT
    assert started_running(SUBMIT, seen, HOUR, seen + HOUR, False)["started_at"] == seen, "never in the future"


def test_a_booting_machine_is_decided_at_ready_timeout_and_a_waiting_job_at_queue_timeout():
    ready, queue = timedelta(minutes=15), timedelta(hours=4)
    assert boot_deadline(SUBMIT, SUBMIT + timedelta(minutes=5), ready, queue) == SUBMIT + ready
    assert boot_deadline(SUBMIT, SUBMIT + ready, ready, queue) == SUBMIT + queue
    assert boot_deadline(SUBMIT, SUBMIT + ready, ready, timedelta(minutes=5)) == SUBMIT + ready
    at = SUBMIT + timedelta(minutes=20)
    assert waited_too_long(SUBMIT, at, False, ready, queue) == ready, "a hung boot is given up"
    assert waited_too_long(SUBMIT, at, True, ready, queue) is None, "a job with a start estimate waits on"
    assert waited_too_long(SUBMIT, SUBMIT + queue, True, ready, queue) == queue


def test_budgets_hold_a_queued_jobs_estimate_and_its_own_price_once_it_runs():
    """While queued (no end yet) the estimate is held and nothing is spent; once it runs, its price from its start."""
    now = SUBMIT + timedelta(minutes=30)
    queued = Held(1, "U1", None, 4, Decimal("3.60"), provider="lab", gpu="a100", price_per_gpu_hour=Decimal("0.90"),
                  currency="USD", started_at=SUBMIT, ends_at=end_at_launch(SUBMIT, HOUR, False))
    [cost] = price_held([queued], now, lambda _p: [], lambda amount, _c: amount).values()
    assert (cost.live, cost.remaining) == (Decimal(0), Decimal("3.60"))
    running = started_running(SUBMIT, now, HOUR, now, False)
    [cost] = price_held([Held(1, "U1", None, 4, Decimal("3.60"), provider="lab", gpu="a100",
                              price_per_gpu_hour=Decimal("0.90"), currency="USD", **running)],
                        now + timedelta(minutes=30), lambda _p: [], lambda amount, _c: amount).values()
    assert (cost.live, cost.remaining) == (Decimal("1.80"), Decimal("1.80")), "half an hour of 4 GPUs each"
