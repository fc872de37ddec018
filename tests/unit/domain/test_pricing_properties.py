"""Money rules as properties: per-second cost with tiers, pool shares, idle waste, forecasts, currency."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from domain.costing import cost_differs, forecast_month, idle_gpu_seconds, pool_shares
from domain.money import CENT, convert
from domain.pricing import Tier, cost_of_seconds, interval_cost, quote_total

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
