"""Report tables and lines as text, in English and through the reader's translation (简体中文)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpubot.bot.i18n import translator_for
from gpubot.domain.costing import GroupTotal
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.report_text import _width, budget_text, cost_table, waiting_text

ZH = translator_for("zh").gettext
NOW = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
ROWS = [GroupTotal("UALICE", Decimal("120"), Decimal("48"), Decimal("6"), Decimal("2.5"))]
TOTAL = GroupTotal("team", Decimal("120"), Decimal("48"), Decimal("6"), Decimal("2.5"))


def test_the_cost_table_is_worded_and_its_columns_line_up_in_both_languages():
    english = cost_table(ROWS, TOTAL, "user", "USD").splitlines()
    assert english[0].split() == ["user", "spend", "GPU-h", "idle", "GPU-h", "idle", "waste"]
    assert english[-1].startswith("total ")
    chinese = cost_table(ROWS, TOTAL, "user", "USD", ZH).splitlines()
    assert chinese[0].split() == ["用户", "支出", "卡时", "闲置卡时", "闲置浪费"] and chinese[-1].startswith("合计")
    # a Chinese character takes two columns: every line, the rules included, is as wide as the header
    assert len({_width(line) for line in chinese}) == 1, chinese
    assert len({len(line) for line in english}) == 1, english


def test_a_budget_line_in_both_languages():
    args = ("team", Decimal(5000), Decimal(120), Decimal(40), Decimal(900), [50], "USD")
    assert budget_text(*args) == ("team: $120.00 spent + $40.00 committed of $5,000.00 (3 %); month-end forecast "
                                  "$900.00 (18 %); thresholds crossed: 50 %")
    assert budget_text(*args, ZH) == ("团队：已支出 $120.00 + 已占用 $40.00，预算 $5,000.00（3%）；预计月底 $900.00"
                                      "（18%）；已越过预算阈值：50%")
    assert budget_text(*args[:5], [], "USD", ZH).endswith("；尚未越过预算阈值")


def test_where_a_waiting_booking_stands_in_both_languages():
    queued = Booking(id=3, owner="U1", gpu="a100", count=4, duration=timedelta(hours=6), state=BookingState.QUEUED,
                     requested_at=NOW - timedelta(minutes=2, seconds=10))
    assert waiting_text(queued, NOW) == "queued, waiting 2m10s"
    assert waiting_text(queued, NOW, ZH) == "排队中，已等待 2 分钟 10 秒"
    later = queued.with_(state=BookingState.SCHEDULED, start_at=NOW + timedelta(hours=20, minutes=50))
    assert waiting_text(later, NOW) == "starts 2026-11-03 08:50 UTC (in 20h50m)"
    assert waiting_text(later, NOW, ZH) == "2026-11-03 08:50 UTC 开始（20 小时 50 分钟后）"
