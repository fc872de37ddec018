"""Alembic environment: runs migrations against the URL set by db.engine.alembic_config."""

from __future__ import annotations

import gpubot.db.tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from alembic import context
from gpubot.db.database import make_engine
from sqlmodel import SQLModel

config = context.config
target_metadata = SQLModel.metadata


def run_migrations() -> None:
    """Run migrations online (a live connection)."""
    url = config.get_main_option("sqlalchemy.url")
    engine = make_engine(url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=connection.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations()
