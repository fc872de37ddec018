"""Alert damping, the way Alertmanager and PagerDuty users expect: a condition must hold for a while before it
pages (`for`), an open alert resolves only once the value is back past the limit by a margin (hysteresis) for a
while and it has been open for a minimum time, and a booking pages at most so many times an hour (further
crossings are folded into the open alert's details instead). Pure rules on plain data: the engine feeds them
samples and the alerts already opened (scheduling/lifecycle/health.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["Damping", "Verdict", "judge", "run_since"]


@dataclass(frozen=True)
class Damping:
    """How one alert kind is damped ([health] for overheat)."""

    for_: timedelta = timedelta(minutes=1)  # the condition holds this long before it opens
    hysteresis: float = 5.0  # it resolves only this far back past the limit…
    resolve_for: timedelta = timedelta(minutes=2)  # …for this long
    min_open: timedelta = timedelta(minutes=10)  # and never sooner than this after it opened
    max_pages_per_hour: int = 4  # per booking; further openings are folded into an open alert


@dataclass(frozen=True)
class Verdict:
    """What to do with one alert key now: open it, fold the crossing into an open alert (the hourly cap is spent),
    resolve it, or nothing."""

    action: str  # "open" | "fold" | "resolve" | "keep"
    since: datetime | None = None  # when the condition (or the recovery) began


KEEP = Verdict("keep")


def run_since(points: Sequence[tuple[datetime, float | None]], holds: Callable[[float], bool]) -> datetime | None:
    """When the trailing run of points for which `holds` is true began (None when the newest known point breaks
    it); unknown values (None) neither extend nor break a run."""
    start = None
    for at, value in sorted(points, key=lambda point: point[0]):
        if value is None:
            continue
        if not holds(value):
            start = None
        elif start is None:
            start = at
    return start


def judge(points: Sequence[tuple[datetime, float | None]], limit: float, damping: Damping, now: datetime, *,
          opened_at: datetime | None, paged_last_hour: int) -> Verdict:
    """The verdict for one key (e.g. a booked GPU's temperature against `limit`) from its recent points.

    `opened_at` is when its open alert opened (None: none open); `paged_last_hour` how many alerts of the same
    booking opened in the last hour. A value above `limit` for `for_` opens (or folds, past the cap); an open
    alert resolves once every value has stayed below `limit - hysteresis` for `resolve_for`, and not before
    `min_open`. Values in between keep whatever is."""
    if opened_at is None:
        hot = run_since(points, lambda value: value > limit)
        if hot is None or now - hot < damping.for_:
            return KEEP
        return Verdict("open" if paged_last_hour < damping.max_pages_per_hour else "fold", hot)
    if now - opened_at < damping.min_open:
        return KEEP
    cool = run_since(points, lambda value: value < limit - damping.hysteresis)
    if cool is None or now - cool < damping.resolve_for:
        return KEEP
    return Verdict("resolve", cool)
