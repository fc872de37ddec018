"""Alert damping: `for`, hysteresis, minimum open time, the hourly cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.domain.alerting import Damping, judge, run_since

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
DAMPING = Damping(for_=timedelta(seconds=60), hysteresis=5, resolve_for=timedelta(seconds=120),
                  min_open=timedelta(minutes=10), max_pages_per_hour=4)


def _points(*values: float | None, step_s: int = 15) -> list[tuple[datetime, float | None]]:
    return [(T0 + timedelta(seconds=i * step_s), v) for i, v in enumerate(values)]


def _now(points) -> datetime:
    return points[-1][0]


def test_it_opens_only_once_the_value_stayed_above_the_limit_for_the_whole_for_window():
    hot = _points(60, 91, 91, 91, 91)  # hot from 15 s to 60 s: 45 s
    assert judge(hot, 85, DAMPING, _now(hot), opened_at=None, paged_last_hour=0).action == "keep"
    hot = _points(60, 91, 91, 91, 91, 91)  # 60 s
    verdict = judge(hot, 85, DAMPING, _now(hot), opened_at=None, paged_last_hour=0)
    assert (verdict.action, verdict.since) == ("open", T0 + timedelta(seconds=15))


def test_a_flapping_value_never_opens():
    flapping = _points(*[95, 60] * 20, step_s=1)
    assert judge(flapping, 85, DAMPING, _now(flapping), opened_at=None, paged_last_hour=0).action == "keep"


def test_with_for_zero_one_reading_above_opens():
    assert judge(_points(91), 85, Damping(for_=timedelta(0)), T0, opened_at=None, paged_last_hour=0).action == "open"


def test_past_the_hourly_cap_a_crossing_is_folded():
    hot = _points(60, *[91] * 5)
    assert judge(hot, 85, DAMPING, _now(hot), opened_at=None, paged_last_hour=4).action == "fold"


def test_it_resolves_only_below_the_hysteresis_for_resolve_for_and_after_min_open():
    opened = T0 - timedelta(minutes=20)
    between = _points(*[84] * 12)  # under the limit, not under limit - hysteresis (80)
    assert judge(between, 85, DAMPING, _now(between), opened_at=opened, paged_last_hour=1).action == "keep"
    cool = _points(91, *[79] * 8)  # 79 °C from 15 s to 120 s: 105 s
    assert judge(cool, 85, DAMPING, _now(cool), opened_at=opened, paged_last_hour=1).action == "keep"
    cool = _points(91, *[79] * 9)  # 120 s
    assert judge(cool, 85, DAMPING, _now(cool), opened_at=opened, paged_last_hour=1).action == "resolve"
    assert judge(cool, 85, DAMPING, _now(cool), opened_at=_now(cool) - timedelta(minutes=9),
                 paged_last_hour=1).action == "keep"  # open for less than min_open


def test_a_gpu_sitting_at_the_limit_pages_once_and_stays_open():
    """84-86 °C around a limit of 85: one opening, no resolve (it never gets below 80)."""
    wobble = _points(*[86, 84, 86, 85, 86, 84] * 20)
    opened = None
    actions = []
    for end in range(1, len(wobble) + 1):
        verdict = judge(wobble[:end], 85, Damping(for_=timedelta(0)), wobble[end - 1][0], opened_at=opened,
                        paged_last_hour=len(actions))
        if verdict.action == "open":
            opened = wobble[end - 1][0]
        if verdict.action != "keep":
            actions.append(verdict.action)
    assert actions == ["open"]


def test_unknown_values_neither_extend_nor_break_a_run():
    assert run_since(_points(91, None, 92), lambda v: v > 85) == T0
    assert run_since(_points(91, 60, None), lambda v: v > 85) is None
    assert run_since(_points(None, None), lambda v: v > 85) is None
