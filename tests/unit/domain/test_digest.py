"""The digest's two renderings: Slack mrkdwn (one paragraph per part) and plain text for a terminal."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from gpubot.domain.costing import GroupTotal
from gpubot.domain.digest import Digest, WasteLine, digest_plain, digest_text

TOTAL = GroupTotal("team", Decimal("20.40"), Decimal(14), Decimal("0.50"), Decimal(1))
DIGEST = Digest(day=date(2026, 11, 2), currency="USD",
                by={"user": [GroupTotal("UALICE", Decimal("12"), Decimal(8), Decimal("0.50"), Decimal(1)),
                             GroupTotal("UBOB", Decimal("8.40"), Decimal(6), Decimal(0), Decimal(0))]},
                total=TOTAL, month_label="2026-11", month_spent=Decimal("20.40"), month_limit=Decimal(5000),
                month_forecast=Decimal(306), daily_spend=[(date(2026, 11, 1), Decimal(0))],
                top_waste=[WasteLine(1, "UALICE", Decimal(1), Decimal("0.50"))],
                active=["#3 4× a100 on a for <@UBOB>"])


def test_plain_text_has_no_slack_markup():
    text = digest_plain(DIGEST)
    assert text.startswith("Digest for 2026-11-02: $20.40 spent, 14.0 GPU-hours, $0.50 idle waste.")
    assert "By user\n  user " in text and "  - #1 @UALICE: 1.0 idle GPU-h, $0.50" in text
    assert "  - #3 4× a100 on a for @UBOB" in text
    assert not any(mark in text for mark in ("*", "```", "<@", "•"))


def test_mrkdwn_keeps_bold_titles_fenced_tables_and_mentions():
    paragraphs = digest_text(DIGEST).split("\n\n")
    assert paragraphs[0] == "📊 *Digest for 2026-11-02*: $20.40 spent, 14.0 GPU-hours, $0.50 idle waste."
    assert paragraphs[2].startswith("*By user*\n```user") and paragraphs[2].endswith("```")
    assert "• #1 <@UALICE>: 1.0 idle GPU-h, $0.50" in paragraphs[3]


def test_a_quiet_day_is_one_line_in_both():
    quiet = Digest(day=date(2026, 11, 2), currency="USD", by={}, total=GroupTotal("team", *[Decimal(0)] * 4),
                   month_label="2026-11", month_spent=Decimal(0), month_limit=Decimal(0),
                   month_forecast=Decimal(0), daily_spend=[])
    assert digest_plain(quiet) == "Digest for 2026-11-02: no activity."
    assert digest_text(quiet) == "📊 Digest for 2026-11-02: no activity."
