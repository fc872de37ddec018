"""Commands that only read the ledger refuse one they cannot vouch for, creating nothing; every command turns a
database fault into one line (`--debug`: the traceback)."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from gpubot.db.database import alembic_config

from tests.cli_kit import gpubot, gpubot_process

READ_ONLY = [("report", "cost"), ("export", "ledger"), ("digest",), ("digest", "--post"), ("db", "current")]
POLICY = '[team]\ndigest_channel = "CDIGEST"\n[providers.sim]\nkind = "simulated"\n'


@pytest.fixture
def workdir(tmp_path):
    """A directory holding only a policy file, which the environment names."""
    (tmp_path / "gpubot.toml").write_text(POLICY)
    return tmp_path


def _env(workdir, url: str | None = None) -> dict:
    return {"GPUBOT_CONFIG": str(workdir / "gpubot.toml"), "DATABASE_URL": url}


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_a_read_only_command_refuses_a_missing_ledger_and_creates_nothing(workdir, args):
    for extra, env in (((), _env(workdir)), (("--database", "nosuch.db"), _env(workdir))):
        ran = gpubot(*args, *extra, cwd=workdir, env=env)
        assert ran.returncode == 2, ran
        assert ran.stdout == "" and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
        assert "does not exist" in ran.stderr and "--database URL or DATABASE_URL" in ran.stderr
    assert sorted(p.name for p in workdir.iterdir()) == ["gpubot.toml"]  # no gpubot.db, no *.inbox.db


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_a_read_only_command_refuses_a_database_without_gpubot_schema(workdir, empty_database_url, args):
    if empty_database_url.startswith("sqlite"):
        import sqlite3

        sqlite3.connect(empty_database_url.removeprefix("sqlite:///")).execute("CREATE TABLE notes (x)").connection \
            .close()
    ran = gpubot(*args, cwd=workdir, env=_env(workdir, empty_database_url))
    assert ran.returncode == 2, ran
    assert "holds no gpubot ledger" in ran.stderr and "--database URL or DATABASE_URL" in ran.stderr


def test_a_ledger_behind_the_newest_migration_is_named_with_how_many(workdir, empty_database_url):
    config = alembic_config(empty_database_url)
    scripts = ScriptDirectory.from_config(config)
    one_behind = scripts.get_revision(scripts.get_current_head()).down_revision
    command.upgrade(config, one_behind)
    report = gpubot("report", "cost", cwd=workdir, env=_env(workdir, empty_database_url))
    assert report.returncode == 2 and "1 migration behind" in report.stderr and "gpubot db upgrade" in report.stderr
    current = gpubot("db", "current", cwd=workdir, env=_env(workdir, empty_database_url))
    assert current.returncode == 0 and f"at migration {one_behind} (1 behind the newest" in current.stdout
    assert gpubot("db", "upgrade", cwd=workdir, env=_env(workdir, empty_database_url)).returncode == 0
    current = gpubot("db", "current", cwd=workdir, env=_env(workdir, empty_database_url))
    assert "(the newest)" in current.stdout
    assert gpubot("report", "cost", cwd=workdir, env=_env(workdir, empty_database_url)).returncode == 0


@pytest.mark.parametrize("args", [*READ_ONLY, ("db", "upgrade")], ids=" ".join)
def test_a_corrupt_sqlite_file_is_one_line_and_exit_1(workdir, args):
    (workdir / "corrupt.db").write_bytes(b"this is no database at all, just some bytes " * 30)
    ran = gpubot(*args, "--database", "corrupt.db", cwd=workdir, env=_env(workdir))
    assert ran.returncode == 1, ran
    assert ran.stderr.startswith("error: ") and len(ran.stderr.strip().splitlines()) == 1, ran.stderr
    assert "file is not a database" in ran.stderr and "Traceback" not in ran.stderr


@pytest.mark.parametrize("args", [*READ_ONLY, ("db", "upgrade")], ids=" ".join)
def test_an_unreachable_postgresql_is_one_line_without_its_password(workdir, args):
    url = "postgresql+psycopg://gpubot:hunter2@127.0.0.1:1/ledger"  # nothing listens on port 1
    ran = gpubot(*args, cwd=workdir, env=_env(workdir, url))
    assert ran.returncode == 1, ran
    assert len(ran.stderr.strip().splitlines()) == 1 and "Connection refused" in ran.stderr, ran.stderr
    assert "hunter2" not in ran.stderr


def test_the_installed_entry_point_refuses_and_debug_shows_the_traceback(workdir):
    env = _env(workdir, "sqlite:///gpubot.db")  # what an unset DATABASE_URL means
    missing = gpubot_process("report", "cost", cwd=workdir, env=env)
    assert missing.returncode == 2 and "no ledger at sqlite:///gpubot.db" in missing.stderr
    assert sorted(p.name for p in workdir.iterdir()) == ["gpubot.toml"]
    (workdir / "corrupt.db").write_bytes(b"not sqlite " * 200)
    quiet = gpubot_process("db", "upgrade", "--database", "corrupt.db", cwd=workdir, env=env)
    assert quiet.returncode == 1 and len(quiet.stderr.strip().splitlines()) == 1, quiet.stderr
    loud = gpubot_process("--debug", "db", "upgrade", "--database", "corrupt.db", cwd=workdir, env=env)
    assert loud.returncode == 1 and "Traceback" in loud.stderr and "file is not a database" in loud.stderr
