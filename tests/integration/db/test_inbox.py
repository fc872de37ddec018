"""The inbox on real SQLite and PostgreSQL: one row per signed body, done once, the unfinished ones listed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.db import inbox
from gpubot.db.engine import Database
from gpubot.db.tables import InboxRow

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def test_a_retried_body_is_one_row_and_only_unfinished_rows_are_listed(database_url):
    db = Database(database_url)
    db.upgrade()
    with db.session() as session:
        assert inbox.record("k1", "command", "https://hooks.example/1", T0, session=session)
        assert not inbox.record("k1", "command", "https://hooks.example/1", T0, session=session)  # Slack's retry
        assert inbox.record("k2", "interaction", None, T0 + timedelta(seconds=1), session=session)
        assert inbox.record("k3", "command", "https://hooks.example/3", T0 + timedelta(seconds=2), session=session)
    with db.session() as session:
        inbox.finish("k2", "finished", T0 + timedelta(seconds=5), session=session)
        inbox.finish("k2", "interrupted", T0 + timedelta(seconds=9), session=session)  # done stays done
        inbox.finish("missing", "finished", T0, session=session)
    with db.session() as session:
        left = inbox.unfinished(session=session)
    assert [(c.key, c.kind, c.response_url) for c in left] == [("k1", "command", "https://hooks.example/1"),
                                                               ("k3", "command", "https://hooks.example/3")]
    with db.session() as session:
        assert session.get(InboxRow, "k2").outcome == "finished"
    db.dispose()
