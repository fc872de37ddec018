"""Alerts on real SQLite and PostgreSQL: one open row per key, and the open keys of a kind found in one read."""

from __future__ import annotations

from datetime import UTC, datetime

from gpubot.db import alerts
from gpubot.db.database import Database

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def test_open_keys_lists_only_the_open_alerts_under_a_prefix(database_url):
    db = Database(database_url)
    db.upgrade()
    with db.session() as session:
        for key in ("gpubot:overheat:1:0", "gpubot:overheat:1:1", "gpubot:overheat_x:2:0", "gpubot:acquire:3"):
            assert alerts.open_alert("overheat", key, "hot", "error", T0, session=session) is not None
        assert alerts.open_alert("overheat", "gpubot:overheat:1:0", "hot", "error", T0, session=session) is None
    with db.session() as session:
        assert alerts.close_alert("gpubot:overheat:1:1", T0, session=session) is not None
    with db.session() as session:
        assert alerts.open_keys("gpubot:overheat:", session=session) == {"gpubot:overheat:1:0"}
