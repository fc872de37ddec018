"""Database faults that are the database's state (down, unreachable, locked, read-only), not a bug in gpubot."""

from __future__ import annotations

import logging

from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

__all__ = ["is_unavailable", "log_failure"]


def is_unavailable(exc: BaseException) -> bool:
    """Whether `exc` says the database cannot be used now (it will be retried), rather than that a statement is
    wrong."""
    return isinstance(exc, OperationalError | InterfaceError | PoolTimeout)


def log_failure(log: logging.Logger, exc: BaseException, message: str, *args: object) -> None:
    """Log a failed turn of background work: one line when the database is away (an outage must not fill the log
    with tracebacks), the traceback otherwise."""
    if is_unavailable(exc):
        log.warning(message + ": the database is unavailable (%s)", *args, type(exc).__name__)
    else:
        log.error(message, *args, exc_info=exc)
