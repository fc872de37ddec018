"""The circuit-breaker rule: closed → open after K counted failures within the window → half-open → closed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.domain.breaker import BreakerRule, BreakerState, allows, on_outcome, state_at

RULE = BreakerRule(failures=3, window=timedelta(seconds=60), cooldown=timedelta(seconds=30))
T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def _feed(state: BreakerState, *outcomes: tuple[int, str | None]) -> BreakerState:
    for seconds, kind in outcomes:
        state = on_outcome(state, kind, T0 + timedelta(seconds=seconds), RULE)
    return state


def test_opens_after_k_consecutive_transient_or_rate_limited_failures():
    state = _feed(BreakerState(), (0, "transient"), (1, "rate_limited"))
    assert state.status == "closed"
    state = _feed(state, (2, "transient"))
    assert state.status == "open" and not allows(state, T0 + timedelta(seconds=3), RULE)


def test_failures_spread_beyond_the_window_or_broken_by_an_answer_do_not_open():
    assert _feed(BreakerState(), (0, "transient"), (61, "transient"), (122, "transient")).status == "closed"
    assert _feed(BreakerState(), (0, "transient"), (1, "no_capacity"), (2, "transient"),
                 (3, "transient")).status == "closed"


def test_half_open_after_the_cool_down_then_closed_on_success_or_open_again_on_failure():
    opened = _feed(BreakerState(), (0, "transient"), (1, "transient"), (2, "transient"))
    assert state_at(opened, T0 + timedelta(seconds=31), RULE).status == "open"
    assert state_at(opened, T0 + timedelta(seconds=32), RULE).status == "half_open"
    assert _feed(opened, (40, None)).status == "closed"
    reopened = _feed(opened, (40, "transient"))
    assert reopened.status == "open" and reopened.opened_at == T0 + timedelta(seconds=40)


def test_outcomes_while_open_change_nothing():
    opened = _feed(BreakerState(), (0, "transient"), (1, "transient"), (2, "transient"))
    assert _feed(opened, (5, None)) == opened
    assert _feed(opened, (5, "transient")) == opened
