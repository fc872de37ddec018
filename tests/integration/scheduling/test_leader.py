"""Leader election on real PostgreSQL: one replica leads, another takes over when it dies."""

from __future__ import annotations

import pytest
from gpubot.db.database import Database
from gpubot.scheduling.leader import Leadership

from tests.databases import postgres_url


@pytest.fixture
def pg_url():
    yield from postgres_url()


def test_exactly_one_leader_and_takeover_after_death(pg_url):
    first, second = Leadership(Database(pg_url)), Leadership(Database(pg_url))
    try:
        assert first.refresh() is True
        assert second.refresh() is False
        assert first.refresh() is True, "the leader keeps the lock across refreshes"
        first.release()  # the leader stops; tests/e2e/test_replicas.py kills a real leader process
        assert second.refresh() is True
        assert first.refresh() is False
    finally:
        first.release()
        second.release()


def test_sqlite_always_leads(tmp_path):
    assert Leadership(Database(f"sqlite:///{tmp_path / 'x.db'}")).refresh() is True
