"""Money rules as properties: per-second cost with tiers (stretch by stretch and summed), pool shares, idle
waste, forecasts, currency."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpubot.domain.costing import cost_differs, forecast_month, idle_gpu_seconds, pool_shares
from gpubot.domain.money import CENT, convert
from gpubot.domain.pricing import (
    Tier,
    cost_of_seconds,
    interval_cost,
    pooled_cost,
    quote_total,
    seconds_beyond,
    summed_cost,
    tier_thresholds,
    use_offset,
)
from hypothesis import given
from hypothesis import strategies as st

ULP = Decimal("1e-18")  # Decimal division rounds at 28 digits; far below a cent
prices = st.decimals(min_value=Decimal("0"), max_value=Decimal("100"), places=4)
gpus = st.integers(min_value=1, max_value=16)
seconds = st.integers(min_value=0, max_value=30 * 86400)
tier_lists = st.lists(st.builds(Tier, st.integers(1, 400).map(lambda h: timedelta(hours=h)),
                                st.decimals(min_value=Decimal("0.5"), max_value=Decimal("100"), places=1)),
                      max_size=3)
T0 = datetime(2026, 11, 1, tzinfo=UTC)


@given(prices, gpus, seconds, seconds, seconds, tier_lists)
def test_cost_is_additive_over_any_split(price, count, offset, first, second, tiers):
    whole = interval_cost(price, count, offset, first + second, tiers)
    parts = interval_cost(price, count, offset, first, tiers) + interval_cost(price, count, offset + first, second,
                                                                              tiers)
    assert abs(whole - parts) <= ULP


@given(prices, gpus, seconds, seconds, tier_lists)
def test_cost_is_never_negative_nor_above_the_undiscounted_price(price, count, offset, length, tiers):
    cost = interval_cost(price, count, offset, length, tiers)
    assert Decimal(0) <= cost <= cost_of_seconds(price, count, length) + ULP


@given(prices, gpus, st.integers(1, 400), st.decimals(min_value=Decimal("1"), max_value=Decimal("100"), places=1))
def test_a_tier_applies_exactly_from_its_threshold(price, count, hours, pct):
    tier = [Tier(timedelta(hours=hours), pct)]
    edge = hours * 3600
    assert interval_cost(price, count, edge - 1, 1, tier) == cost_of_seconds(price, count, 1)
    assert interval_cost(price, count, edge, 1, tier) == cost_of_seconds(price, count, 1) * (100 - pct) / 100
    across = interval_cost(price, count, edge - 60, 120, tier)
    assert abs(across - cost_of_seconds(price, count, 60) * (200 - pct) / 100) <= ULP


def test_autodl_ten_percent_after_72h_to_the_cent():
    tiers = [Tier(timedelta(hours=72), Decimal(10))]
    cost = interval_cost(Decimal("2.00"), 4, 0, 80 * 3600, tiers)
    assert cost.quantize(CENT) == Decimal("2.00") * 4 * 72 + Decimal("2.00") * 4 * 8 * Decimal("0.9")


@given(st.decimals(min_value=Decimal("0"), max_value=Decimal("1e6"), places=2),
       st.decimals(min_value=Decimal("0.001"), max_value=Decimal("1000"), places=4))
def test_currency_round_trips(amount, rate):
    team = convert(amount, "CNY", "USD", {"CNY": rate})
    assert abs(team / rate - amount) <= ULP * max(amount, 1)
    assert convert(amount, "USD", "USD", {}) == amount


@given(prices, gpus, st.integers(1, 200))
def test_a_quote_equals_the_ledger_cost_of_the_same_stretch(price, count, hours):
    fx = {"CNY": Decimal("0.14")}
    quoted = quote_total(price, count, timedelta(hours=hours), "CNY", "USD", fx)
    assert quoted == convert(interval_cost(price, count, 0, hours * 3600), "CNY", "USD", fx)


@given(st.dictionaries(st.integers(1, 50), st.integers(1, 10**6), min_size=1, max_size=8),
       st.decimals(min_value=Decimal("1"), max_value=Decimal("10000"), places=2))
def test_pool_shares_split_the_fee_of_the_period_by_gpu_seconds(used, fee):
    month = (T0, T0 + timedelta(days=30))
    shares = pool_shares(fee, month, (T0, T0 + timedelta(days=3)), used)
    assert abs(sum(shares.values()) - fee / 10) <= ULP * 100
    heavy, light = max(used, key=used.get), min(used, key=used.get)
    assert shares[heavy] >= shares[light]


def test_idle_counts_only_low_readings_and_never_missing_telemetry():
    at = [T0 + timedelta(minutes=m) for m in (0, 1, 2, 30)]
    samples = [(0, 5.0, at[0]), (0, 90.0, at[1]), (0, 3.0, at[2]), (0, 4.0, at[3]), (1, 1.0, at[0])]
    idle = idle_gpu_seconds(samples, 15, T0, T0 + timedelta(hours=1), timedelta(minutes=5))
    # gpu0: 60 s (first reading) + 5 min (capped gap after 3 %) + 5 min (last reading); gpu1: 5 min
    assert idle == 60 + 300 + 300 + 300


def test_forecast_is_linear_and_cost_difference_has_a_two_percent_tolerance():
    month = (T0, T0 + timedelta(days=30))
    assert forecast_month(Decimal(100), month, T0 + timedelta(days=10)) == Decimal(300)
    assert cost_differs(Decimal(100), Decimal("101.99")) is None
    assert cost_differs(Decimal(100), Decimal("102.01")) == Decimal("0.0201")
    assert cost_differs(Decimal(0), Decimal(0)) is None


tiers_from_zero = st.lists(st.builds(Tier, st.integers(0, 30).map(lambda h: timedelta(hours=h)),
                                     st.decimals(min_value=Decimal("0.5"), max_value=Decimal("100"), places=1)),
                           max_size=4)
stretches = st.lists(st.tuples(st.integers(0, 40 * 3600), st.integers(0, 12 * 3600)), min_size=1, max_size=12)


@given(prices, gpus, stretches, tiers_from_zero)
def test_summed_stretches_cost_what_pricing_each_costs(price, count, parts, tiers):
    beyond = {t: sum(seconds_beyond(offset, length, t) for offset, length in parts) for t in tier_thresholds(tiers)}
    summed = summed_cost(price, count, sum(length for _offset, length in parts), beyond, tiers)
    each = sum((interval_cost(price, count, offset, length, tiers) for offset, length in parts), Decimal(0))
    assert abs(summed - each) <= ULP


@given(st.integers(0, 500), st.integers(0, 500), st.integers(0, 1000))
def test_seconds_beyond_counts_the_seconds_past_a_threshold(offset, length, threshold):
    assert seconds_beyond(offset, length, threshold) == sum(1 for s in range(offset, offset + length) if s >= threshold)


@given(prices, st.lists(st.tuples(gpus, seconds, seconds), max_size=6), tier_lists)
def test_pooled_stretches_cost_what_pricing_each_costs(price, stretches, tiers):
    each = sum((interval_cost(price, count, offset, length, tiers) for count, offset, length in stretches), Decimal(0))
    assert abs(pooled_cost(price, stretches, tiers) - each) <= ULP * (1 + len(stretches))


def test_pooled_cost_of_two_bookings_one_past_its_tier():
    tiers = [Tier(timedelta(hours=72), Decimal(10))]  # 4 GPUs 70 h in, 2 more hours; 2 GPUs fresh, 10 hours
    assert pooled_cost(Decimal("2.00"), [(4, 70 * 3600, 2 * 3600), (2, 0, 10 * 3600)], tiers) == \
        Decimal("2.00") * 4 * 2 + Decimal("2.00") * 2 * 10
    assert pooled_cost(Decimal("2.00"), [(4, 71 * 3600, 2 * 3600)], tiers) == \
        Decimal("2.00") * 4 + Decimal("2.00") * 4 * Decimal("0.9")
    assert pooled_cost(Decimal("2.00"), []) == 0


def test_summed_cost_of_the_readme_example():
    tiers = [Tier(timedelta(hours=72), Decimal(10))]  # 80 h of 4 GPUs at 2.00, billed in 10-minute stretches
    parts = [(k * 600, 600) for k in range(80 * 6)]
    beyond = {72 * 3600: sum(seconds_beyond(o, n, 72 * 3600) for o, n in parts)}
    assert beyond == {72 * 3600: 8 * 3600}
    assert summed_cost(Decimal("2.00"), 4, 80 * 3600, beyond, tiers) == Decimal("2.00") * 4 * 72 + \
        Decimal("2.00") * 4 * 8 * Decimal("0.9")


def test_use_offset_is_whole_seconds_since_the_start_and_never_negative():
    started = T0 + timedelta(microseconds=900_000)
    assert use_offset(started, T0 + timedelta(hours=1)) == 3599
    assert use_offset(started, T0) == 0
    assert use_offset(None, T0 + timedelta(hours=5)) == 0
