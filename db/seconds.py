"""Time arithmetic in SQL, spelt per database: seconds between two moments (exact), a moment as whole microseconds
since the epoch (exact, an integer), and the larger of several values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import BigInteger, Float
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

__all__ = ["EpochMicroseconds", "Greatest", "SecondsBetween", "epoch_microseconds"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class SecondsBetween(FunctionElement):
    """`later - earlier` in seconds, as a float (each database spells it its own way)."""

    type, inherit_cache, name = Float(), True, "seconds_between"


class EpochMicroseconds(FunctionElement):
    """A moment as whole microseconds since 1970 UTC: differences of two are exact integers, and integer division
    by 1,000,000 truncates them as `int(timedelta.total_seconds())` does (spans under centuries)."""

    type, inherit_cache, name = BigInteger(), True, "epoch_microseconds"


class Greatest(FunctionElement):
    """The largest of its arguments (none of which may be NULL: SQLite's answer would be NULL, PostgreSQL's not)."""

    type, inherit_cache, name = BigInteger(), True, "greatest"


def _sqlite_epoch_us(moment: str) -> str:
    # Whole seconds from strftime of the text up to the seconds, microseconds from the rest ("YYYY-MM-DD
    # HH:MM:SS.ffffff", UTC): exact. julianday's double (in days) is off by up to ~0.1 ms, and strftime of the
    # whole text rounds to the millisecond first, so "…:11.999999" would read as second 12.
    return f"(strftime('%s', substr({moment}, 1, 19)) * 1000000 + CAST(substr({moment}, 21, 6) AS INTEGER))"


def _sqlite_seconds(element, compiler, **kw) -> str:
    later, earlier = (compiler.process(c, **kw) for c in element.clauses)
    return f"(({_sqlite_epoch_us(later)} - {_sqlite_epoch_us(earlier)}) / 1e6)"


def _postgresql_seconds(element, compiler, **kw) -> str:
    later, earlier = (compiler.process(c, **kw) for c in element.clauses)
    return f"EXTRACT(EPOCH FROM ({later} - {earlier}))"


compiles(SecondsBetween, "sqlite")(_sqlite_seconds)
compiles(SecondsBetween, "postgresql")(_postgresql_seconds)


@compiles(EpochMicroseconds, "sqlite")
def _epoch_sqlite(element, compiler, **kw) -> str:
    return _sqlite_epoch_us(compiler.process(element.clauses, **kw))


@compiles(EpochMicroseconds, "postgresql")
def _epoch_postgresql(element, compiler, **kw) -> str:
    # EXTRACT gives an exact numeric with six decimals: times a million, a whole number
    return f"CAST(EXTRACT(EPOCH FROM {compiler.process(element.clauses, **kw)}) * 1000000 AS BIGINT)"


@compiles(Greatest, "sqlite")
def _greatest_sqlite(element, compiler, **kw) -> str:
    return f"max({compiler.process(element.clauses, **kw)})"


@compiles(Greatest, "postgresql")
def _greatest_postgresql(element, compiler, **kw) -> str:
    return f"GREATEST({compiler.process(element.clauses, **kw)})"


def epoch_microseconds(moment: datetime) -> int:
    """`moment` as `EpochMicroseconds` reads it in the database (a naive moment is UTC, as the ledger stores it)."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return (aware - _EPOCH) // timedelta(microseconds=1)
