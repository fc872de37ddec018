"""The migrated templates the tests copy their ledgers from are exactly what migrating an empty database gives."""

from __future__ import annotations

from contextlib import ExitStack

import pytest
from gpubot.db.database import Database
from sqlalchemy import inspect, text

from tests.databases import MIGRATED, migrations_hash, postgres_url, sqlite_url


def _schema(url: str) -> dict:
    """Every table's columns, indexes, keys and the migration it stands at, as comparable data."""
    db = Database(url)
    try:
        found = inspect(db.engine)
        tables = {}
        for table in sorted(found.get_table_names()):
            tables[table] = {
                "columns": [(c["name"], str(c["type"]), c["nullable"], str(c.get("default"))) for c in
                            found.get_columns(table)],
                "indexes": sorted((i["name"], tuple(i["column_names"]), bool(i["unique"])) for i in
                                  found.get_indexes(table)),
                "primary": found.get_pk_constraint(table)["constrained_columns"],
                "foreign": sorted((tuple(f["constrained_columns"]), f["referred_table"]) for f in
                                  found.get_foreign_keys(table)),
                "unique": sorted(tuple(u["column_names"]) for u in found.get_unique_constraints(table)),
            }
        with db.engine.connect() as conn:
            version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
        return {"tables": tables, "version": version}
    finally:
        db.dispose()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_ledger_copied_from_the_template_equals_a_fresh_migration(kind, tmp_path, sqlite_template_dir):
    with ExitStack() as stack:
        if kind == "sqlite":
            copied, fresh_url = sqlite_url(tmp_path, sqlite_template_dir), f"sqlite:///{tmp_path / 'fresh.db'}"
        else:
            copied = stack.enter_context(_generated(postgres_url()))
            fresh_url = stack.enter_context(_generated(postgres_url(migrated=False)))
        assert copied in MIGRATED and fresh_url not in MIGRATED
        fresh = Database(fresh_url)
        fresh.upgrade()
        fresh.dispose()
        assert _schema(copied) == _schema(fresh_url)


def test_the_template_is_named_by_every_migration_script(tmp_path, monkeypatch):
    """A new or edited migration changes the name, so a template of older migrations is never reused."""
    import tests.databases as databases

    before = migrations_hash()
    scripts = tmp_path / "migrations"
    scripts.mkdir()
    (scripts / "0001.py").write_text("revision = '0001'\n")
    monkeypatch.setattr(databases, "_MIGRATIONS", scripts)
    databases.migrations_hash.cache_clear()
    try:
        first = databases.migrations_hash()
        (scripts / "0002.py").write_text("revision = '0002'\n")
        databases.migrations_hash.cache_clear()
        assert databases.migrations_hash() not in (first, before)
    finally:
        monkeypatch.undo()
        databases.migrations_hash.cache_clear()
    assert databases.migrations_hash() == before


def _generated(urls):
    """A generator fixture (`postgres_url()`) as a context manager: its URL, then its clean-up."""
    from contextlib import contextmanager

    @contextmanager
    def manager():
        try:
            yield next(urls)
        finally:
            next(urls, None)

    return manager()
