"""Core statements on a session's connection: the hot paths of the ledger skip the ORM layer."""

from __future__ import annotations

from sqlalchemy.engine import CursorResult
from sqlmodel import Session

__all__ = ["execute"]


def execute(session: Session, statement, params: dict | list[dict] | None = None) -> CursorResult:
    """Run a Core statement in the session's transaction, without the ORM's execution layer.

    Through `Session.execute` an UPDATE also synchronises the identity map and every statement builds ORM
    compile state; on the per-booking paths (state changes, telemetry, intents) that cost several times the
    SQL itself (see the replay profile in the README). Rows come back as plain tuples.
    """
    return session.connection().execute(statement, params)
