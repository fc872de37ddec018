"""Options that several `gpubot` commands share: `--database` above all, with one default for every command."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["DEMO_DATABASE", "Database", "database_url"]

# The demo keeps its own file so that trying gpubot never writes into the team's ledger (DATABASE_URL).
DEMO_DATABASE = "sqlite:///gpubot-demo.db"

Database = Annotated[str | None, typer.Option(
    "--database", metavar="URL",
    help="Database URL or SQLite file (default: DATABASE_URL, else sqlite:///gpubot.db)")]


def database_url(value: str | None) -> str | None:
    """A database URL from `--database`: a URL as given, a bare file name as SQLite (`ledger.db`)."""
    if not value:
        return None
    return value if "://" in value else f"sqlite:///{value}"
