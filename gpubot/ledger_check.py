"""Whether a database holds gpubot's ledger, read without writing: a missing SQLite file is not created, a
database without gpubot's schema is not migrated. Read-only commands refuse what this cannot vouch for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url

from gpubot.db import revisions

__all__ = ["POINT_AT_LEDGER", "SchemaState", "ledger_refusal", "schema_state"]

POINT_AT_LEDGER = "point at the ledger with --database URL or DATABASE_URL"


@dataclass(frozen=True)
class SchemaState:
    """What a database holds: `problem` (one line) when it cannot be read, else its migration and how many behind."""

    url: str  # printable: no password
    problem: str | None = None
    fault: bool = False  # True: the database could not be reached or read (not merely empty or missing)
    revision: str | None = None  # None: no gpubot schema
    behind: int = 0
    unknown: bool = False  # a revision this gpubot's migrations do not know (a newer gpubot migrated it)


def _printable(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy parses: say it as given
        return url


def _sqlite_file(url: str) -> Path | None:
    """The file of a plain SQLite file URL, None for anything else (PostgreSQL, memory, URI options)."""
    if not url.startswith("sqlite:///") or "?" in url or url.endswith(":memory:"):
        return None
    return Path(url.removeprefix("sqlite:///"))


def _behind(revision: str) -> tuple[int, bool]:
    """How many migrations `revision` lies behind head, and whether it is unknown to this gpubot."""
    chain = revisions.chain()  # head first
    if revision not in chain:
        return 0, True
    return chain.index(revision), False


def schema_state(url: str) -> SchemaState:
    """Read (never create or migrate) the database at `url`: reachable, gpubot's schema, which migration."""
    from gpubot.startup import one_line

    shown = _printable(url)
    path = _sqlite_file(url)
    if path is not None and not path.is_file():
        return SchemaState(shown, f"no ledger at {shown}: the file {path} does not exist")
    try:
        engine = create_engine(url, connect_args={"connect_timeout": 5} if url.startswith("postgresql") else {})
    except Exception as exc:  # a URL SQLAlchemy cannot parse or has no driver for
        return SchemaState(shown, f"database URL {shown} is not usable: {type(exc).__name__}: {exc}", fault=True)
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return SchemaState(shown, f"{shown} holds no gpubot ledger (no gpubot schema in it)")
            revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except Exception as exc:  # one line: the driver's own first line
        return SchemaState(shown, f"database {shown} cannot be used: {one_line(exc)}", fault=True)
    finally:
        engine.dispose()
    if revision is None:
        return SchemaState(shown, f"{shown} holds no gpubot ledger (its schema has no migration recorded)")
    behind, unknown = _behind(revision)
    return SchemaState(shown, revision=revision, behind=behind, unknown=unknown)


def ledger_refusal(url: str) -> tuple[str, int] | None:
    """Why a read-only command must not read `url` and its exit code (2: wrong place, 1: fault), or None."""
    state = schema_state(url)
    if state.problem:
        return (state.problem if state.fault else f"{state.problem}; {POINT_AT_LEDGER}"), 1 if state.fault else 2
    if state.unknown:
        return (f"the ledger {state.url} is at migration {state.revision}, which this gpubot does not know "
                "(a newer gpubot migrated it): upgrade gpubot"), 2
    if state.behind:
        return (f"the ledger {state.url} is {state.behind} migration{'s' if state.behind > 1 else ''} behind this "
                "gpubot: run `gpubot db upgrade` (see docs/upgrading.md)"), 2
    return None
