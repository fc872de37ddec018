"""Budget locks: the decision that a booking fits its budgets and the hold that records it are one atomic step.

SQLite has one writer at a time, and every transaction starts with BEGIN IMMEDIATE (db.engine), so a transaction
that reads the commitments and then writes its hold already holds the write lock from its first statement: no
other replica or thread can slip a hold in between. PostgreSQL runs writers concurrently (READ COMMITTED), so
there each budget scope the booking touches is locked with a transaction-level advisory lock, keyed by the
schema and the scope, taken in one fixed (sorted) order before the commitments are read, and released at commit
or rollback. A transaction that takes them must take them first, before it locks any row.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from gpubot.db.core import execute
from gpubot.db.effects import budget_overrides
from gpubot.db.ledger_window import CUSTOM_PLANS, planned_custom
from gpubot.db.tables.billing import BudgetOverrideRow
from sqlalchemy import bindparam, text
from sqlmodel import Session

__all__ = ["lock_budgets"]

_O = BudgetOverrideRow.__table__

# The locks and the first read of a budget decision, the budgets admins set, in one statement. unnest yields the
# sorted scopes in order and each lock is taken as its row is produced (a volatile function in the output is
# evaluated row by row, in the ORDER BY's order); UNION ALL then reads the overrides, so every lock is held before
# the statements after this one (the commitments) take their snapshot and see what a lock's last holder
# committed. The overrides are read in this statement's snapshot, which may predate a wait for a lock: the locks
# never guarded them (an admin's change is not serialised with bookings), so that is as if it came a moment later.
# The decision then reads the month's ledger, which db.ledger_window plans with its bounds (CUSTOM_PLANS): set here for
# the transaction. set_config is parallel-unsafe, so the plan is never parallel and the parts run in this order.
_LOCK_AND_READ = text(
    "SELECT NULL AS scope, NULL AS amount FROM ("
    " SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || ':budget:' || scope, 0)) AS locked,"
    f" {CUSTOM_PLANS} AS plans"
    " FROM unnest(CAST(:scopes AS text[])) WITH ORDINALITY AS taken(scope, n) ORDER BY n) AS locks"
    f" UNION ALL SELECT scope, amount FROM {_O.name}").bindparams(bindparam("scopes"))


def lock_budgets(scopes: Iterable[str], *, session: Session) -> dict[str, Decimal]:
    """Hold the budget lock of each scope until the session's transaction ends (taken in sorted order), then
    read the budgets admins set, by scope (`effects.budget_overrides`): one statement on PostgreSQL."""
    if session.get_bind().dialect.name != "postgresql" or not (ordered := sorted(set(scopes))):
        session.connection()  # SQLite: BEGIN IMMEDIATE, the write lock, is taken here
        return budget_overrides(session=session)
    rows = execute(session, _LOCK_AND_READ, {"scopes": ordered}).all()
    planned_custom(session)
    return {scope: Decimal(amount) for scope, amount in rows if scope is not None}
