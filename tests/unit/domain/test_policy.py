"""The whole policy: its tables put together and checked against each other, the example file, and errors that
name the key (each table's defaults and value types: test_policy_sections.py)."""

from __future__ import annotations

import tomllib
from datetime import timedelta
from pathlib import Path

import pytest
from gpubot.domain.errors import ConfigError
from gpubot.domain.policy import rollup_interval
from gpubot.providers.registry import policy_from_dict

EXAMPLE = Path(__file__).parents[3] / "gpubot.example.toml"


@pytest.mark.parametrize("raw, key, needle", [
    ({"budget": {"thresholds": [50, "x"]}}, "budget.thresholds.1", "integer"),
    ({"booking": {"max_duration": "soon"}}, "booking.max_duration", "2h30m"),
    ({"budget": {"over_budget": "maybe"}}, "budget.over_budget", "warn"),
    ({"team": {"timezone": "Mars/Olympus"}}, "team.timezone", "IANA"),
    ({"providers": {"x": {"kind": "azure"}}}, "providers.x.kind", "autodl"),
    ({"teem": {}}, "teem", "unknown key"),
    ({"providers": {"x": {"kind": "autodl", "currency": "CNY"}}}, "providers.x.currency", "[fx]"),
    ({"providers": {"g": {"kind": "gcp", "zones": ["us-central1-a", "us-central1b"]}}}, "providers.g.zones.1",
     "a zone such as 'us-central1-a'"),
])
def test_a_bad_value_names_the_key_and_what_was_expected(raw, key, needle):
    with pytest.raises(ConfigError) as caught:
        policy_from_dict(raw)
    assert caught.value.key == key
    assert needle in str(caught.value)


def test_the_example_file_is_valid():
    policy = policy_from_dict(tomllib.loads(EXAMPLE.read_text()))
    assert policy.fx["CNY"] > 0


def test_retention_defaults_to_a_week_and_may_be_as_short_as_the_checks_read():
    policy = policy_from_dict({})
    assert (policy.retention.notices, policy.retention.telemetry) == (timedelta(days=7), timedelta(days=7))
    short = policy_from_dict({"idle": {"for": "1h"}, "retention": {"telemetry": "2h", "notices": "1d"}})
    assert short.retention.telemetry == timedelta(hours=2)
    assert policy.retention.telemetry_rollup is None and rollup_interval(policy) == timedelta(minutes=5)
    minute = policy_from_dict({"retention": {"telemetry_rollup": "1m"}})
    assert rollup_interval(minute) == timedelta(minutes=1)


def test_an_unset_rollup_stays_within_a_short_staleness_and_divides_a_day():
    for stale, interval in (("4s", 4), ("7s", 6), ("2m", 120), ("7m", 300)):
        policy = policy_from_dict({"health": {"telemetry_stale_after": stale}})
        assert rollup_interval(policy) == timedelta(seconds=interval), stale


@pytest.mark.parametrize("raw, key, needed", [
    ({"retention": {"telemetry": "19m"}}, "retention.telemetry", "at least 20m (twice idle.for"),
    ({"idle": {"for": "2h"}, "retention": {"telemetry": "3h"}}, "retention.telemetry", "at least 4h"),
    ({"health": {"telemetry_stale_after": "1d"}, "retention": {"telemetry": "12h"}}, "retention.telemetry",
     "at least 1d"),
    ({"retention": {"notices": "6h"}}, "retention.notices", "at least 1d"),
    ({"retention": {"telemetry_rollup": "10m"}}, "retention.telemetry_rollup", "a whole number of seconds"),
    ({"retention": {"telemetry_rollup": "7m"}}, "retention.telemetry_rollup", "a whole number of seconds"),
    ({"retention": {"telemetry_rollup": "0s"}}, "retention.telemetry_rollup", "a whole number of seconds"),
])
def test_a_retention_shorter_than_what_reads_the_rows_is_refused_naming_the_key(raw, key, needed):
    with pytest.raises(ConfigError) as caught:
        policy_from_dict(raw)
    assert caught.value.key == key and caught.value.expected.startswith(needed)


def test_waiting_for_cheaper_capacity_is_off_unless_set_and_then_shorter_than_giving_up():
    assert policy_from_dict({}).acquire.wait_for_cheaper is None
    assert policy_from_dict({"acquire": {"wait_for_cheaper": "2h"}}).acquire.wait_for_cheaper == timedelta(hours=2)
    for wait in ("4h", "5h", "0s"):  # give_up_after is 4h by default
        with pytest.raises(ConfigError) as caught:
            policy_from_dict({"acquire": {"wait_for_cheaper": wait}})
        assert caught.value.key == "acquire.wait_for_cheaper"
        assert caught.value.expected.startswith("longer than 0s and shorter than acquire.give_up_after (4h)")
    longer = policy_from_dict({"acquire": {"wait_for_cheaper": "5h", "give_up_after": "12h"}})
    assert longer.acquire.wait_for_cheaper == timedelta(hours=5)
