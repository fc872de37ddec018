"""`--from-ledger` reads the team's ledger through a connection that cannot write, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from gpubot.domain.replay_trace import TraceError
from gpubot.scheduling.replay.ledger import read_only_engine
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError


def test_the_ledger_connection_reads_but_cannot_write(database_url):
    engine = read_only_engine(database_url)
    try:
        with engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM bookings")).scalar() == 0
            with pytest.raises(DBAPIError, match=r"(?i)read.?only"):
                connection.execute(text("DELETE FROM bookings"))
    finally:
        engine.dispose()


def test_a_sqlite_file_that_does_not_exist_is_refused_not_created(tmp_path):
    with pytest.raises(TraceError, match="no database at"):
        read_only_engine(f"sqlite:///{tmp_path / 'nope.db'}")
    assert not (tmp_path / "nope.db").exists()
