"""The commitment arithmetic: what a budget scope has committed, from plain data (no ledger, no clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.domain.budget import BudgetLine
from gpubot.domain.commitment import (
    HELD_STATES,
    Held,
    HeldCost,
    HeldSeconds,
    headroom,
    lock_keys,
    price_held,
    scope_covers,
    scope_lines,
)
from gpubot.domain.costing import forecast_month
from gpubot.domain.model import FINAL_STATES, BookingState
from gpubot.domain.pricing import Tier

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
NO_TIERS = lambda _provider: []  # noqa: E731
SAME = lambda amount, _currency: amount  # noqa: E731


def _running(**changes) -> Held:
    base = Held(id=1, owner="UALICE", project=None, count=2, estimate=Decimal("999"), provider="a",
                price_per_gpu_hour=Decimal("1.50"), currency="USD", started_at=T0, ends_at=T0 + timedelta(hours=6))
    return base._replace(**changes)


def test_every_state_but_the_final_ones_holds_money():
    assert set(BookingState) - FINAL_STATES == HELD_STATES
    assert {BookingState.REQUESTED, BookingState.AWAITING_APPROVAL, BookingState.SCHEDULED, BookingState.QUEUED,
            BookingState.ACQUIRING, BookingState.ACTIVE, BookingState.RELEASING} <= HELD_STATES


def test_live_and_remaining_add_up_to_the_whole_booking_at_any_fractional_instant():
    # $1 a second on one GPU, billed to a fractional instant, read at another: not a second goes missing.
    held = _running(count=1, price_per_gpu_hour=Decimal(3600), ends_at=T0 + timedelta(hours=1),
                    billed_until=T0 + timedelta(seconds=2, milliseconds=300))
    costs = price_held([held], T0 + timedelta(seconds=2, milliseconds=900), NO_TIERS, SAME)[("UALICE", None)]
    assert costs.live + costs.remaining + 2 == 3600, costs


def test_a_running_booking_counts_its_unbilled_stretch_as_live_and_the_rest_as_remaining():
    held = _running(billed_until=T0 + timedelta(hours=1))
    costs = price_held([held], T0 + timedelta(hours=2), NO_TIERS, SAME)
    # billed to 11:00; 11:00-12:00 live (2 GPUs × $1.50), 12:00-16:00 remaining; the $999 estimate is ignored
    assert costs == {("UALICE", None): HeldCost(live=Decimal("3.00"), remaining=Decimal("12.00"))}


def test_an_extension_moves_the_end_and_so_the_remaining_estimate():
    before = price_held([_running()], T0, NO_TIERS, SAME)[("UALICE", None)].remaining
    after = price_held([_running(ends_at=T0 + timedelta(hours=9))], T0, NO_TIERS, SAME)[("UALICE", None)].remaining
    assert (before, after) == (Decimal("18.00"), Decimal("27.00"))


def test_a_booking_past_its_end_but_not_released_keeps_billing_live():
    costs = price_held([_running()], T0 + timedelta(hours=7), NO_TIERS, SAME)
    assert costs[("UALICE", None)] == HeldCost(live=Decimal("21.00"), remaining=Decimal(0))


def test_a_release_in_progress_has_no_remaining_time():
    held = _running(released_at=T0 + timedelta(hours=1))
    assert price_held([held], T0 + timedelta(hours=1), NO_TIERS, SAME)[("UALICE", None)].remaining == 0


def test_a_waiting_booking_counts_its_estimate_and_the_live_stretch_starts_at_the_period():
    waiting = Held(id=2, owner="UBOB", project="llm", count=4, estimate=Decimal("16"))
    running = _running(started_at=T0 - timedelta(days=2), ends_at=T0 + timedelta(hours=1))
    costs = price_held([waiting, running], T0, NO_TIERS, SAME, since=T0 - timedelta(hours=1))
    assert costs[("UBOB", "llm")] == HeldCost(remaining=Decimal("16"))
    assert costs[("UALICE", None)] == HeldCost(live=Decimal("3.00"), remaining=Decimal("3.00"))


def test_tiers_count_from_the_start_of_use_and_currencies_are_converted():
    held = _running(started_at=T0 - timedelta(hours=72), ends_at=T0 + timedelta(hours=2), currency="CNY",
                    price_per_gpu_hour=Decimal("10"), billed_until=T0)
    tiers = lambda provider: [Tier(timedelta(hours=72), Decimal(10))] if provider == "a" else []  # noqa: E731
    costs = price_held([held], T0, tiers, lambda amount, currency: amount * Decimal("0.14"))
    assert costs[("UALICE", None)].remaining == Decimal("10") * 2 * 2 * Decimal("0.9") * Decimal("0.14")


def test_scope_lines_add_live_to_spent_and_holds_to_committed_for_the_scopes_they_fall_in():
    held = {("UALICE", "llm"): HeldCost(Decimal(1), Decimal(10)), ("UBOB", None): HeldCost(Decimal(2), Decimal(20))}
    lines = scope_lines([("team", Decimal(100), Decimal(5)), ("user:UALICE", Decimal(50), Decimal(3)),
                         ("project:llm", Decimal(40), Decimal(0)), ("project:(none)", Decimal(40), Decimal(0))],
                        held)
    assert [(line.scope, line.spent, line.committed) for line in lines] == [
        ("team", Decimal(8), Decimal(30)), ("user:UALICE", Decimal(4), Decimal(10)),
        ("project:llm", Decimal(1), Decimal(10)), ("project:(none)", Decimal(2), Decimal(20))]


def test_headroom_is_the_tightest_limited_budget():
    lines = [BudgetLine("team", Decimal(100), Decimal(50), Decimal(20)), BudgetLine("user:U", Decimal(40),
                                                                                     Decimal(30), Decimal(5)),
             BudgetLine("project:p", Decimal(0), Decimal(500))]
    assert headroom(lines) == Decimal(5)
    assert headroom([BudgetLine("team", Decimal(0), Decimal(9))]) is None


def test_scopes_and_their_lock_order():
    assert scope_covers("team", "U1", None) and scope_covers("user:U1", "U1", "p")
    assert not scope_covers("user:U2", "U1", "p") and scope_covers("project:p", "U2", "p")
    assert scope_covers("project:(none)", "U1", None) and not scope_covers("project:p", "U1", None)
    assert lock_keys("UB", "zeta") == ["project:zeta", "team", "user:UB"] == sorted(lock_keys("UB", "zeta"))


def test_the_month_end_forecast_is_never_below_what_is_spent_and_committed():
    month = (datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
    assert forecast_month(Decimal(0), month, month[0] + timedelta(minutes=3), Decimal("14.52")) == Decimal("14.52")
    assert forecast_month(Decimal(10), month, month[0] + timedelta(days=15), Decimal(1)) == Decimal(20)
    assert forecast_month(Decimal(0), month, month[0], Decimal(5)) == Decimal(5)


def test_untiered_bookings_summed_as_seconds_cost_what_their_stretches_pooled_cost():
    """Untiered prices are summed as GPU-seconds, not as stretches: to the last digit what pooling the stretches
    (the tiered path, here with a tier that never applies) gives, across owners, prices, billed stretches, a
    release in progress, an end passed and a start before the period."""
    since = T0 - timedelta(hours=1)
    now = T0 + timedelta(hours=2, seconds=17, milliseconds=400)
    held = [_running(), _running(id=2, count=3, billed_until=T0 + timedelta(minutes=37, seconds=3)),
            _running(id=3, started_at=T0 - timedelta(hours=5, seconds=11), owner="UBOB"),
            _running(id=4, released_at=T0 + timedelta(hours=1, seconds=5), price_per_gpu_hour=Decimal("2.35")),
            _running(id=5, ends_at=T0 + timedelta(hours=1))]
    never = lambda _provider: [Tier(timedelta(days=10_000), Decimal(0))]  # noqa: E731
    summed = price_held(held, now, NO_TIERS, SAME, since)
    assert summed == price_held(held, now, never, SAME, since)
    assert summed[("UALICE", None)].live > 0 and summed[("UBOB", None)].remaining > 0


def test_summed_seconds_price_as_the_rows_they_sum_and_a_tiered_price_is_refused():
    rows = [_running(count=2), _running(count=3, started_at=T0 + timedelta(minutes=30))]
    now = T0 + timedelta(hours=2)
    live = sum(h.count * int((now - h.started_at).total_seconds()) for h in rows)
    rest = sum(h.count * int((h.ends_at - now).total_seconds()) for h in rows)
    summed = [HeldSeconds("UALICE", None, "a", Decimal("1.50"), "USD", live, rest)]
    assert price_held([], now, NO_TIERS, SAME, summed=summed) == price_held(rows, now, NO_TIERS, SAME)
    tiered = lambda _provider: [Tier(timedelta(hours=1), Decimal(10))]  # noqa: E731
    with pytest.raises(ValueError, match="tiered"):
        price_held([], now, tiered, SAME, summed=summed)
