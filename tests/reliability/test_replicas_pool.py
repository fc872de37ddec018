"""Two `gpubot serve` replicas on one PostgreSQL, requests alternated between them (issue #7, part 6).

Many concurrent bookings of a team pool: exactly as many GPUs are handed out as the pool has, none twice. Then
the scheduler leader is SIGKILLed: the other replica takes the lead and runs the jobs (it expires a booking
whose time is up) within 30 s.
"""

from __future__ import annotations

import re
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from gpubot.db import bookings as repo
from gpubot.db.database import Database
from gpubot.db.tables.machines import PoolClaimRow
from gpubot.domain.model import BookingState
from sqlmodel import select

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.databases import postgres_url
from tests.e2e.server_kit import start_bot
from tests.reliability.figures import FULL, record, size

BOOKINGS, HOSTS = size(short=60, full=500), size(short=5, full=25)  # 4 GPUs per host
GPUS = 4 * HOSTS
CONFIG = """
[team]
admins = ["UADMIN"]
[budget]
monthly = 100000000
over_budget = "warn"
[booking]
max_gpus_per_user = 1000
[scheduler]
tick = "1s"
reconcile_every = "1h"
[acquire]
poll_every = "3s"
backoff_max = "30s"
give_up_after = "2h"
[providers.lab]
kind = "pool"
machines = [MACHINES]
"""


@pytest.fixture
def pg_url():
    yield from postgres_url()


def _config() -> str:
    machines = ", ".join(f'{{ host = "gpu-{i:02d}", gpu = "a100", gpus = 4 }}' for i in range(HOSTS))
    return CONFIG.replace("MACHINES", machines)


def _leads(bot) -> bool:
    try:
        text = httpx.get(f"{bot.url}/metrics", timeout=5).text
    except httpx.HTTPError:
        return False
    return bool(re.search(r"^gpubot_scheduler_leader 1\.0$", text, re.M))


def _wait(predicate, timeout: float, every: float = 0.5) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():
            return time.monotonic() - started
        time.sleep(every)
    return None


def _states(db: Database) -> dict[BookingState, int]:
    with db.session() as session:
        bookings = repo.list_bookings(session=session)
    counts: dict[BookingState, int] = {}
    for booking in bookings:
        counts[booking.state] = counts.get(booking.state, 0) + 1
    return counts


@pytest.mark.postgres
@pytest.mark.timeout(1800 if FULL else 300)
def test_concurrent_bookings_of_a_pool_never_share_a_gpu_and_the_leader_fails_over(tmp_path, pg_url):
    api, db = FakeSlackApi(), Database(pg_url)
    api.start()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    bots = [start_bot(tmp_path / name, _config(), api, {"DATABASE_URL": pg_url}) for name in "ab"]
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(16) as senders:
            codes = list(senders.map(lambda i: bots[i % 2].command("book a100x1 8h", user=f"U{i % 50:03d}")
                                     .status_code, range(BOOKINGS)))
        settled = _wait(lambda: sum(_states(db).values()) == BOOKINGS and _states(db).get(BookingState.ACTIVE, 0)
                        == min(GPUS, BOOKINGS), 240 if FULL else 90)
        took = time.monotonic() - started
        states = _states(db)
        with db.session() as session:
            claims = session.exec(select(PoolClaimRow)).all()
            active = repo.list_bookings(session=session, states=[BookingState.ACTIVE])
        slots = [(c.host, c.slot) for c in claims]
        record("replicas", f"{BOOKINGS} concurrent bookings over 2 replicas of a {GPUS}-GPU pool: "
                           f"{states.get(BookingState.ACTIVE, 0)} active, {states.get(BookingState.QUEUED, 0)} "
                           f"queued; GPUs allocated {len(slots)}, distinct {len(set(slots))}; settled in {took:.0f} s")
        assert codes == [200] * BOOKINGS and settled is not None, states
        assert len(slots) == len(set(slots)) == GPUS == sum(b.count for b in active)
        assert {c.instance_name for c in claims} == {b.instance_name for b in active}
        leader = _wait(lambda: [_leads(b) for b in bots].count(True) == 1, 20)
        assert leader is not None
        first, other = (bots[0], bots[1]) if _leads(bots[0]) else (bots[1], bots[0])
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(10)
        due = active[0]
        with db.session() as session:
            repo.set_fields(due.id, session=session, ends_at=datetime.now(UTC) - timedelta(seconds=1))
        ran = _wait(lambda: _states_of(db, due.id) == BookingState.RELEASED, 30, every=0.25)
        record("replicas", "leader SIGKILLed: the other replica expired a due booking after "
                           + (f"{ran:.1f} s" if ran is not None else "more than 30 s"))
        assert ran is not None and _leads(other)
    finally:
        for bot in bots:
            bot.stop()
        api.stop()
        db.dispose()


def _states_of(db: Database, booking_id: int) -> BookingState:
    with db.session() as session:
        return repo.get_booking(booking_id, session=session).state
