"""Ledgers for tests, migrated once per run: a SQLite template file copied per test, and a PostgreSQL template
schema whose DDL (pg_dump's) makes a copy per test.

Each template is named by a hash of the migration scripts, so a new or changed migration makes a new template
and can never be skipped; `tests/integration/db/test_templates.py` checks that a clone equals a fresh migration.
A test that is about migrating itself asks for `empty_database_url` instead.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from gpubot.db.database import Database, inbox_url
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

__all__ = ["MIGRATED", "PG_ADMIN_URL", "postgres_problem", "postgres_url", "sqlite_url"]

PG_ADMIN_URL = os.environ.get("GPUBOT_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
_MIGRATIONS = Path(__file__).parents[1] / "db" / "migrations"

MIGRATED: set[str] = set()  # URLs handed out already at head: tests.engine_kit skips their (no-op) upgrade


@cache
def migrations_hash() -> str:
    """A short hash of every migration script: the templates' name."""
    digest = hashlib.sha256()
    for path in sorted(_MIGRATIONS.rglob("*.py")):
        digest.update(path.relative_to(_MIGRATIONS).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


@cache
def postgres_problem() -> str | None:
    """Why the test PostgreSQL server cannot be used, or None."""
    try:
        engine = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:
        return f"PostgreSQL at {PG_ADMIN_URL.split('@')[-1]} is unreachable ({type(exc).__name__}); skipped"


# --- SQLite -------------------------------------------------------------------------------------------------------

def _sqlite_files(url: str) -> list[Path]:
    """The ledger file of a SQLite URL and the inbox file beside it."""
    files = [Path(url.removeprefix("sqlite:///"))]
    inbox = inbox_url(url)
    return files + ([Path(inbox.removeprefix("sqlite:///"))] if inbox else [])


@cache
def _sqlite_template(directory: str) -> str:
    url = f"sqlite:///{Path(directory) / f'template-{migrations_hash()}.db'}"
    db = Database(url)
    db.upgrade()
    db.dispose()  # the last connection closed: the WAL is checkpointed into the file
    return url


def sqlite_url(tmp_path: Path, template_dir: Path, name: str = "ledger.db") -> str:
    """A migrated SQLite ledger (and its inbox file) at `tmp_path / name`, copied from the run's template."""
    url = f"sqlite:///{tmp_path / name}"
    for source, target in zip(_sqlite_files(_sqlite_template(str(template_dir))), _sqlite_files(url), strict=True):
        shutil.copyfile(source, target)
    MIGRATED.add(url)
    return url


# --- PostgreSQL ---------------------------------------------------------------------------------------------------

def _admin():
    return create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")


def _schema_url(schema: str) -> str:
    return f"{PG_ADMIN_URL}?options=-csearch_path%3D{schema}"


def _has_schema(conn, schema: str) -> bool:
    found = conn.execute(text("SELECT 1 FROM pg_namespace WHERE nspname = :s"), {"s": schema}).first()
    return found is not None


@cache
def _postgres_template() -> tuple[str, str] | None:
    """The template schema at head, made once for every process of the run, and the DDL that makes a copy of it
    (pg_dump's, with the schema's name as the placeholder); None without pg_dump (each test then migrates).

    An advisory lock keeps two test workers from building it at once; it is built under another name and renamed,
    so it is whole or absent."""
    if shutil.which("pg_dump") is None:
        return None
    schema = f"gpubot_tmpl_{migrations_hash()}"
    admin = _admin()
    with admin.connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(hashtext(:s))"), {"s": schema})
        try:
            if not _has_schema(conn, schema):
                building = f"{schema}_{secrets.token_hex(3)}"
                conn.execute(text(f'CREATE SCHEMA "{building}"'))
                Database(_schema_url(building)).upgrade()
                conn.execute(text(f'ALTER SCHEMA "{building}" RENAME TO "{schema}"'))
            version = conn.execute(text(f'SELECT version_num FROM "{schema}".alembic_version')).scalar_one()
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(hashtext(:s))"), {"s": schema})
    admin.dispose()
    return schema, _ddl(schema) + f"\nINSERT INTO {schema}.alembic_version VALUES ('{version}');\n"


def _ddl(schema: str) -> str:
    """The statements that make `schema`'s tables, sequences and indexes (psql's own commands left out)."""
    server = make_url(PG_ADMIN_URL)
    command = ["pg_dump", "--schema-only", "--no-owner", "--no-privileges", f"--schema={schema}",
               f"--host={server.host}", f"--port={server.port or 5432}", f"--username={server.username}",
               f"--dbname={server.database}"]
    dump = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60,
                          env={**os.environ, **({"PGPASSWORD": server.password} if server.password else {})}).stdout
    return "\n".join(line for line in dump.splitlines() if not line.startswith("\\"))


def _make_schema(conn, schema: str, migrated: bool) -> None:
    template = _postgres_template() if migrated else None
    if template is None:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        if migrated:
            Database(_schema_url(schema)).upgrade()
        return
    name, ddl = template
    # The driver's own execute: one round trip of many statements (SQLAlchemy's would bind them as one)
    conn.connection.driver_connection.execute(ddl.replace(f"{name}.", f"{schema}.").replace(f"CREATE SCHEMA {name};",
                                                                       f"CREATE SCHEMA {schema};"))


def postgres_url(migrated: bool = True) -> Iterator[str]:
    """A schema of its own on the test PostgreSQL server — a copy of the template at head, or empty — dropped
    afterwards."""
    if problem := postgres_problem():
        pytest.skip(problem)
    schema = f"t_{secrets.token_hex(5)}"
    admin = _admin()
    with admin.connect() as conn:
        _make_schema(conn, schema, migrated)
    url = _schema_url(schema)
    if migrated:
        MIGRATED.add(url)
    try:
        yield url
    finally:
        MIGRATED.discard(url)
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
