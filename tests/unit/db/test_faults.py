"""Background work logs a database outage as one line, and anything else with its traceback."""

from __future__ import annotations

import logging

import pytest
from gpubot.db.faults import is_unavailable, log_failure
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

DOWN = OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))


@pytest.mark.parametrize("exc", [DOWN, PoolTimeout("QueuePool limit reached")])
def test_an_unreachable_or_exhausted_database_is_unavailable(exc):
    assert is_unavailable(exc)


@pytest.mark.parametrize("exc", [IntegrityError("INSERT", {}, ValueError("unique")), KeyError("x")])
def test_a_wrong_statement_or_a_bug_is_not(exc):
    assert not is_unavailable(exc)


def test_an_outage_is_one_line_and_a_bug_keeps_its_traceback(caplog):
    log = logging.getLogger("test.faults")
    with caplog.at_level(logging.WARNING, logger="test.faults"):
        log_failure(log, DOWN, "job %s failed", "expiry")
        try:
            raise KeyError("booking")
        except KeyError as bug:
            log_failure(log, bug, "job %s failed", "expiry")
    outage, bug = caplog.records
    assert outage.levelno == logging.WARNING and outage.exc_info is None
    assert outage.getMessage() == "job expiry failed: the database is unavailable (OperationalError)"
    assert bug.levelno == logging.ERROR and bug.exc_info and bug.getMessage() == "job expiry failed"
