"""SQLModel tables, grouped by area in this package's modules. Only db/ imports them; the rest of the house sees
domain objects. Importing the package puts every table on SQLModel.metadata (Alembic's env.py, the schema tests,
and foreign keys between areas need them all); it re-exports no names: import a row from its area's module."""

from __future__ import annotations

from gpubot.db.tables import (  # noqa: F401  (each registers its tables on SQLModel.metadata)
    billing,
    bookings,
    delivery,
    machines,
    operations,
    people,
    telemetry,
)

__all__: list[str] = []
