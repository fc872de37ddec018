"""gpubot's chain of migrations, read from the migration files (their `revision` and `down_revision`) without
importing Alembic: a `gpubot serve` on a ledger already at the newest migration (every start but an upgrade's)
needs no more than this, where Alembic and its template engine cost ~0.4 s of CPU to import and load."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

__all__ = ["VERSIONS", "chain", "chain_in", "current", "head"]

VERSIONS = Path(__file__).with_name("migrations") / "versions"


def _links(path: Path) -> tuple[str, str | None]:
    """(revision, down_revision) of one migration file, from its module-level assignments."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id in ("revision", "down_revision") and node.value is not None:
            found[target.id] = ast.literal_eval(node.value)
    revision, down = found.get("revision"), found.get("down_revision")
    if not isinstance(revision, str) or not (down is None or isinstance(down, str)):
        raise ValueError(f"{path.name}: no single revision and down_revision")
    return revision, down


@cache
def chain() -> tuple[str, ...]:
    """Every revision of gpubot, newest first (Alembic's `walk_revisions` order)."""
    return chain_in(VERSIONS)


def chain_in(directory: Path) -> tuple[str, ...]:
    """The revisions of the migration files in `directory`, newest first; ValueError unless they form one line."""
    parent = dict(_links(path) for path in sorted(directory.glob("*.py")))
    heads = set(parent) - set(parent.values())
    if len(heads) != 1:
        raise ValueError(f"the migrations do not form one line: heads {sorted(heads)}")
    walked = [heads.pop()]
    while (down := parent[walked[-1]]) is not None:
        walked.append(down)
    if len(walked) != len(parent):
        raise ValueError("the migrations do not form one line: some are off the chain from the head")
    return tuple(walked)


def head() -> str:
    """The newest revision."""
    return chain()[0]


def current(connection: Connection) -> str | None:
    """The revision the database is at; None for a database without gpubot's schema."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
