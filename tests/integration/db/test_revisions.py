"""db/revisions.py reads the chain of migrations without Alembic: it must be Alembic's chain, and a ledger at the
newest migration must open (and `upgrade`) without importing Alembic at all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from gpubot.db import revisions
from gpubot.db.database import Database, alembic_config


def test_the_chain_is_alembics_own() -> None:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert revisions.chain() == tuple(r.revision for r in script.walk_revisions())
    assert revisions.head() == script.get_current_head()


def _migration(directory: Path, revision: str, down: str | None) -> None:
    (directory / f"{revision}_x.py").write_text(f'"""x"""\nrevision = {revision!r}\ndown_revision = {down!r}\n')


def test_two_heads_or_a_gap_are_refused(tmp_path: Path) -> None:
    for revision, down in (("0001", None), ("0002", "0001"), ("0003", "0001")):
        _migration(tmp_path, revision, down)
    with pytest.raises(ValueError, match=r"heads \['0002', '0003'\]"):
        revisions.chain_in(tmp_path)
    (tmp_path / "0003_x.py").unlink()
    _migration(tmp_path, "0004", "0009")  # points at a revision that is not there
    with pytest.raises((ValueError, KeyError)):
        revisions.chain_in(tmp_path)
    (tmp_path / "0004_x.py").unlink()
    assert revisions.chain_in(tmp_path) == ("0002", "0001")


def test_a_ledger_at_head_is_upgraded_without_importing_alembic(database_url: str) -> None:
    Database(database_url).upgrade()  # at head already (a copy of the migrated template): nothing to do
    code = ("import sys; from gpubot.db.database import Database; db = Database(sys.argv[1]); db.upgrade(); "
            "print('alembic' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", code, database_url], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "False", shown.stderr


def test_an_empty_database_is_still_migrated_by_alembic(empty_database_url: str) -> None:
    database = Database(empty_database_url)
    database.upgrade()
    with database.engine.connect() as connection:
        assert revisions.current(connection) == revisions.head()
