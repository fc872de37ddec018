"""The token bucket behind the telemetry rate limit."""

from __future__ import annotations

from gpubot.domain.ratelimit import take


def test_a_burst_is_allowed_then_the_rate_with_a_retry_after():
    bucket, allowed = None, []
    for _ in range(10):
        bucket, wait = take(bucket, 0.0, rate=0.5, burst=4)
        allowed.append(wait is None)
    assert allowed == [True] * 4 + [False] * 6
    assert take(bucket, 0.0, rate=0.5, burst=4)[1] == 2  # one action every 2 s
    bucket, wait = take(bucket, 2.0, rate=0.5, burst=4)
    assert wait is None and take(bucket, 2.0, rate=0.5, burst=4)[1] == 2


def test_a_quiet_key_refills_only_up_to_the_burst():
    bucket, _ = take(None, 0.0, rate=1, burst=3)
    bucket, _ = take(bucket, 1000.0, rate=1, burst=3)
    assert bucket.tokens == 2


def test_a_refused_try_costs_nothing():
    bucket, _ = take(None, 0.0, rate=1, burst=1)
    for _ in range(5):
        bucket, wait = take(bucket, 0.5, rate=1, burst=1)
        assert wait == 1
    assert take(bucket, 1.0, rate=1, burst=1)[1] is None
