"""People repository: the language each person chose with `/gpu lang` (an upsert, one row per person)."""

from __future__ import annotations

from datetime import datetime

from gpubot.db.database import Database
from gpubot.db.tables.people import PersonRow
from sqlmodel import Session

__all__ = ["LedgerLanguages", "chosen_language", "set_language"]


def chosen_language(user_id: str, *, session: Session) -> str | None:
    """The language `user_id` chose (`en`, `zh`), or None when they never chose one."""
    row = session.get(PersonRow, user_id)
    return row.language if row else None


def set_language(user_id: str, language: str | None, now: datetime, *, session: Session) -> None:
    """Record the language `user_id` chose (None forgets the choice)."""
    row = session.get(PersonRow, user_id)
    if row is None:
        session.add(PersonRow(user_id=user_id, language=language, updated_at=now))
    else:
        row.language, row.updated_at = language, now
        session.add(row)


class LedgerLanguages:
    """The people's chosen languages, kept in the ledger (the bot's `LanguageBook`)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    def chosen(self, user_id: str) -> str | None:
        """The language `user_id` chose, or None."""
        with self.database.session() as session:
            return chosen_language(user_id, session=session)

    def choose(self, user_id: str, language: str | None, now: datetime) -> None:
        """Record the language `user_id` chose."""
        with self.database.session() as session:
            set_language(user_id, language, now, session=session)
