"""The inbox on real SQLite and PostgreSQL: one row per signed body, done once, the unfinished ones listed; on
SQLite in a file of its own, so recording never waits for the ledger's write lock."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from gpubot.db import inbox
from gpubot.db.database import Database
from gpubot.db.tables.delivery import InboxRow

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def test_a_retried_body_is_one_row_and_only_unfinished_rows_are_listed(database_url):
    ledger = Database(database_url)
    ledger.upgrade()
    db = ledger.inbox
    with db.transaction() as connection:  # the ack's path: a Core connection, no ORM session
        assert inbox.record("k1", "command", "https://hooks.example/1", T0, session=connection)
        assert not inbox.record("k1", "command", "https://hooks.example/1", T0, session=connection)  # Slack's retry
    with db.session() as session:
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
    ledger.dispose()


def test_on_sqlite_the_inbox_is_a_file_of_its_own_that_records_while_the_ledger_is_write_locked(tmp_path):
    ledger = Database(f"sqlite:///{tmp_path / 'gpubot.db'}")
    ledger.upgrade()
    assert ledger.inbox.url == f"sqlite:///{tmp_path / 'gpubot.inbox.db'}"
    assert Database(f"sqlite:///file:{tmp_path / 'gpubot.db'}?mode=ro&uri=true").inbox.url.endswith("uri=true")
    with ledger.session() as booking_work:
        booking_work.connection()  # BEGIN IMMEDIATE: the ledger's write lock, held while the command is recorded
        started = time.perf_counter()
        with ledger.inbox.transaction() as connection:
            assert inbox.record("k1", "command", None, T0, session=connection)
        assert time.perf_counter() - started < 1.0  # the ledger's busy timeout is 10 s
    with ledger.inbox.session() as session:
        assert [c.key for c in inbox.unfinished(session=session)] == ["k1"]
    with ledger.session() as session:
        assert inbox.unfinished(session=session) == []
    ledger.dispose()
