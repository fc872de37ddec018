"""The fuller reader of `--at` / `--until` text, built on dateparser, that the `/gpu` listener hands the grammar.

The grammar (domain.grammar_moments) reads the forms the docs list, in English and Chinese, purely; what it does
not know (`dec 1 9am`, `in 3 hours`, `3小时后`, `friday at 9am`, `9 Dec 2026 10:00`) comes here. dateparser is a
third-party library that reads many languages, so it stays out of domain/ (which imports only the standard
library and pydantic) and is imported on first use (it takes about a second to load its language data).

Its defaults are tamed: `RELATIVE_BASE` is the grammar's `now` in the reader's zone (never the clock),
`PREFER_DATES_FROM = future`, `TIMEZONE` the reader's zone. A date with no time of day (`dec 1`, `next friday`)
would come back at midnight, or at the current time of day: such text is refused with "needs a time of day"
rather than read as a moment the person never named. Measured with dateparser 1.5 (tests/unit/bot/test_moments.py):
it does not read `9点`, `今晚`, `下周一` or `12月1日`, which is why the grammar reads those itself.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, tzinfo

from gpubot.domain.grammar_moments import AT_EXAMPLE
from gpubot.domain.grammar_text import fail, shown

__all__ = ["read_moment"]

_LANGUAGES = ["en", "zh"]
_TIME_GIVEN = re.compile(
    r"[0-9]\s*:\s*[0-9]{2}|[0-9]\s*(?:am|pm)\b|[0-9]\s*[点點时時]|\b(?:noon|midnight|morning|afternoon|evening)\b"
    r"|中午|早上|上午|下午|晚上|凌晨|\bin\s+(?:[0-9]|an?\b|half)"
    r"|(?:hours?|minutes?|mins?|days?|weeks?)\s+(?:later|from now)"
    r"|[0-9]\s*(?:个)?(?:小时|小時|分钟|分鐘|天|周|星期)\s*(?:后|後|以后|之后)",
    re.IGNORECASE)


def _zone_name(zone: tzinfo) -> str:
    return getattr(zone, "key", None) or ("UTC" if zone is UTC else str(zone))


def read_moment(text: str, now: datetime, zone: tzinfo) -> datetime | None:
    """The aware moment `text` names, read in `zone` relative to `now`; None when dateparser reads none; a
    date with no time of day is refused."""
    import dateparser  # heavy (language data): loaded only when the grammar's own forms fall short

    local_now = now.astimezone(zone).replace(tzinfo=None)
    moment = dateparser.parse(text, languages=_LANGUAGES, settings={
        "TIMEZONE": _zone_name(zone), "RETURN_AS_TIMEZONE_AWARE": True, "RELATIVE_BASE": local_now,
        "PREFER_DATES_FROM": "future"})
    if moment is None:
        return None
    if not _TIME_GIVEN.search(text):
        raise fail("`{text}` needs a time of day, like `{text} 09:00`", AT_EXAMPLE, text=shown(text))
    return moment.astimezone(UTC)
