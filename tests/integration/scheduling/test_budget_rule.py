"""The budget rule as a stateful property (issue #17): random sequences of book, book --at, queue (booking when
nothing is free), extend, cancel, approve, deny, release, price changes and the passing of time, across users and
projects, on SQLite and PostgreSQL. At every step, for every budget scope, what the bookings that went through the
rule have committed stays within the budget — computed here from the ledger rows and booking rows themselves,
and equal to what `/gpu budget` reports."""

from __future__ import annotations

import contextlib
import os
import time
from datetime import UTC, timedelta
from decimal import Decimal

import pytest
from gpubot.db import bookings as repo
from gpubot.db.database import Database
from gpubot.db.tables.billing import UsageIntervalRow
from gpubot.domain.commitment import HELD_STATES
from gpubot.domain.errors import Refused
from gpubot.domain.model import Booking, BookingState
from gpubot.providers.registry import policy_from_dict
from gpubot.providers.simulated.adapter import SimulatedCloud
from gpubot.scheduling.acquisition.queue import drain, start_now
from gpubot.scheduling.booking.booking import BookingAsk, book, cancel, extend, release
from gpubot.scheduling.desk import approvals
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.expiry import expire_due
from gpubot.scheduling.money.billing import accrue_all
from gpubot.scheduling.money.reports import budget_statuses
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from sqlmodel import SQLModel, select

from tests.conftest import Clock

EXAMPLES = int(os.environ.get("GPUBOT_BUDGET_EXAMPLES", "25"))  # per database and mode; more for the issue note
USERS, PROJECTS = ("UANA", "UBEN", "UCAI"), ("llm", "vision", None)
LIMITS = {"team": Decimal(120), "user:UANA": Decimal(40), "project:llm": Decimal(50)}
EPSILON = Decimal("0.000001")
RAN: dict[str, list[int]] = {}


def _policy(mode: str):
    return policy_from_dict({
        "team": {"admins": ["UADMIN"]},
        "budget": {"monthly": 120, "over_budget": mode, "users": {"UANA": 40}, "projects": {"llm": 50}},
        "booking": {"max_duration": "12h"},
        "acquire": {"offer_cache": 0, "give_up_after": "3h"},
        "providers": {
            "cheap": {"kind": "simulated", "stock": [{"gpu": "a100", "region": "c-1", "count": 2, "price": 2}]},
            "dear": {"kind": "simulated", "stock": [{"gpu": "a100", "region": "d-1", "count": 1, "price": 3}]}}})


def _utc(moment):
    return moment if moment is None or moment.tzinfo else moment.replace(tzinfo=UTC)


def _cost(price: Decimal, count: int, seconds: float) -> Decimal:
    return price * count * Decimal(int(seconds)) / Decimal(3600)


def _committed(booking: Booking, rows: list[UsageIntervalRow], now) -> Decimal:
    """What one booking commits, straight from its rows: billed stretches, then the live stretch and the rest of
    its slot when it runs, or its held estimate when it waits."""
    billed = sum((_cost(Decimal(r.price_per_gpu_hour), r.count, (_utc(r.end) - _utc(r.start)).total_seconds())
                  for r in rows), Decimal(0))
    if booking.state not in HELD_STATES:
        return billed
    if booking.started_at is None or booking.price_per_gpu_hour is None:
        return billed + (booking.estimate or Decimal(0))
    until = max([_utc(r.end) for r in rows] + [booking.started_at])
    end = booking.released_at or booking.ends_at
    return billed + _cost(booking.price_per_gpu_hour, booking.count, (max(until, now) - until).total_seconds()) \
        + _cost(booking.price_per_gpu_hour, booking.count, max(0.0, (end - max(until, now)).total_seconds()))


def _in_scope(scope: str, booking: Booking) -> bool:
    kind, _, name = scope.partition(":")
    return kind == "team" or (kind == "user" and booking.owner == name) or (kind == "project"
                                                                              and booking.project == name)


def _machine(database: Database, mode: str):
    class BudgetRule(RuleBasedStateMachine):
        """One random history of bookings against three budgets."""

        def __init__(self) -> None:
            super().__init__()
            with database.session() as session:
                for table in reversed(SQLModel.metadata.sorted_tables):
                    session.execute(table.delete())
            self.clock = Clock()
            policy = _policy(mode)
            self.clouds = {name: SimulatedCloud(name, config) for name, config in policy.providers.items()}
            self.engine = Engine(db=database, policy=policy, providers=self.clouds, clock=self.clock)
            self.ids: list[int] = []
            self.steps = 0
            RAN.setdefault(mode, [0, 0])[0] += 1

        def _pick(self, index: int) -> int | None:
            return self.ids[index % len(self.ids)] if self.ids else None

        def _book(self, user: str, project: str | None, count: int, hours: int, at_hours: int = 0) -> None:
            at = self.clock() + timedelta(hours=at_hours) if at_hours else None
            ask = BookingAsk(owner=user, gpu="a100", count=count, duration=timedelta(hours=hours), project=project,
                             start_at=at)
            try:
                booked = book(self.engine, ask)
            except Refused:
                return
            self.ids.append(booked.booking.id)
            if booked.booking.state == BookingState.REQUESTED:
                start_now(self.engine, booked.booking)

        @rule(user=st.sampled_from(USERS), project=st.sampled_from(PROJECTS), count=st.integers(1, 2),
              hours=st.integers(1, 8))
        def book_now(self, user, project, count, hours):
            self._book(user, project, count, hours)

        @rule(user=st.sampled_from(USERS), project=st.sampled_from(PROJECTS), count=st.integers(1, 2),
              hours=st.integers(1, 8), at=st.integers(1, 6))
        def book_at(self, user, project, count, hours, at):
            self._book(user, project, count, hours, at)

        @rule(cheap=st.sampled_from([0, 1, 4]), dear=st.sampled_from([0, 1]),
              price=st.sampled_from([Decimal(2), Decimal(10)]))
        def market(self, cheap, dear, price):
            """Nothing free makes the next bookings queue; a price change is what the launch re-check is for."""
            self.clouds["cheap"].set_stock("a100", "c-1", cheap, price=price)
            self.clouds["dear"].set_stock("a100", "d-1", dear, price=Decimal(3))

        @rule(index=st.integers(0, 50), hours=st.integers(1, 6))
        def extend_one(self, index, hours):
            if (booking_id := self._pick(index)) is not None:
                self._try(extend, booking_id, timedelta(hours=hours))

        @rule(index=st.integers(0, 50))
        def cancel_one(self, index):
            if (booking_id := self._pick(index)) is not None:
                self._try(cancel, booking_id)

        @rule(index=st.integers(0, 50))
        def release_one(self, index):
            if (booking_id := self._pick(index)) is not None:
                self._try(release, booking_id)

        @rule(index=st.integers(0, 50), yes=st.booleans())
        def approve_or_deny(self, index, yes):
            if (booking_id := self._pick(index)) is not None:
                with contextlib.suppress(Refused):
                    (approvals.approve if yes else approvals.deny)(self.engine, booking_id, "UADMIN")

        @rule(minutes=st.integers(5, 240))
        def time_passes(self, minutes):
            """The scheduler's jobs on time: each end expires when it comes, the queue drains, billing accrues."""
            target = self.clock() + timedelta(minutes=minutes)
            while True:
                with self.engine.db.session() as session:
                    active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
                ends = [b.ends_at for b in active if b.ends_at and b.ends_at <= target]
                self.clock.current = max(self.clock(), min([*ends, target]))
                expire_due(self.engine)
                drain(self.engine)
                if not ends:
                    break
            with self.engine.db.session() as session:
                active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
            accrue_all(self.engine, active)

        def _try(self, action, booking_id: int, *args) -> None:
            """The owner does it (an admin would be let past the budget, and warned)."""
            with self.engine.db.session() as session:
                owner = repo.get_booking(booking_id, session=session).owner
            with contextlib.suppress(Refused):
                action(self.engine, booking_id, owner, *args)

        @invariant()
        def no_budget_is_passed(self):
            """Bookings that went through the rule (neither approved over budget nor waiting for it) never commit
            more than a budget; `/gpu budget` counts every booking alike."""
            self.steps += 1
            RAN[mode][1] += 1
            now = self.clock()
            with self.engine.db.session() as session:
                bookings = repo.list_bookings(session=session)
                rows = list(session.exec(select(UsageIntervalRow)))
            per_booking = {b.id: (b, _committed(b, [r for r in rows if r.booking_id == b.id], now))
                           for b in bookings}
            reported = {s.scope: s.projected for s in budget_statuses(self.engine, now)}
            for scope, limit in LIMITS.items():
                everyone = sum((c for b, c in per_booking.values() if _in_scope(scope, b)), Decimal(0))
                assert abs(reported[scope] - everyone) <= EPSILON, (scope, reported[scope], everyone)
                ruled = sum((c for b, c in per_booking.values() if _in_scope(scope, b) and not b.approved_by
                             and b.state != BookingState.AWAITING_APPROVAL), Decimal(0))
                assert ruled <= limit + EPSILON, (scope, ruled, limit, mode)

    return BudgetRule


@pytest.mark.parametrize("mode", ["block", "approve"])
def test_no_budget_is_ever_passed(database_url, mode):
    database = Database(database_url)
    database.upgrade()
    started = time.perf_counter()
    try:
        run_state_machine_as_test(_machine(database, mode), settings=settings(
            max_examples=EXAMPLES, stateful_step_count=30, deadline=None,
            # No shrinking: a failing history (≤ 30 steps) is printed as found, within the test's timeout.
            phases=[Phase.explicit, Phase.reuse, Phase.generate],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
    finally:
        database.dispose()
    examples, steps = RAN.pop(mode)
    print(f"\nbudget rule ({mode}, {database_url.split(':')[0]}): {examples} cases, {steps} checked steps "
          f"in {time.perf_counter() - started:.1f} s")
    assert examples >= EXAMPLES
