"""Crash trials: `gpubot serve` against fake Lambda and RunPod servers, SIGKILLed at random moments.

Each trial restarts the bot on the same SQLite ledger (its start-up reconcile runs before it serves), waits until
nothing is in flight, checks that clouds and ledger agree, then books, releases or expires something, or books
and waits until the machine boots (both fakes boot over a few describes), and kills the process at a random
moment of it. At the end everything is released, every instance-second the fakes ran is compared with what the
ledger billed, and every booking whose machine became reachable has had exactly one ready DM.
"""

from __future__ import annotations

import random
import signal
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpubot.db import bookings as repo
from gpubot.db.database import Database
from gpubot.db.tables.billing import UsageIntervalRow
from gpubot.domain.model import Booking, BookingState, parse_instance_tag
from sqlmodel import select

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.e2e.server_kit import RunningBot, start_bot
from tests.fakes.lambda_api import FakeLambda, Run
from tests.fakes.runpod_api import FakeRunPod

__all__ = ["CrashRig", "Tally"]

TICK = 1.0  # scheduler.tick below: billing is compared "within a tick"
CONFIG = """
[team]
admins = ["UADMIN"]
[budget]
monthly = 10000000
over_budget = "warn"
[booking]
max_gpus_per_user = 64
[scheduler]
tick = "1s"
reconcile_every = "1h"
[acquire]
poll_every = "1s"
backoff_max = "2s"
ready_poll_every = "1s"
ready_poll_max = "2s"
[providers.lambda]
kind = "lambda"
regions = ["us-east-1"]
request_interval = "0s"  # the fake Lambda here enforces no rate limit (tests/integration/scheduling/test_pacing.py)
launch_interval = "0s"
[providers.runpod]
kind = "runpod"
"""
IN_FLIGHT = (BookingState.REQUESTED, BookingState.ACQUIRING, BookingState.BOOTING, BookingState.RELEASING,
             BookingState.QUEUED)
BOOT_WINDOW = 4.0  # seconds after a booking is seen booting in which a "boot" trial kills (its polls and the DM)
USERS = ("UALICE", "UBOB", "UCAROL", "UDAVE")


@dataclass
class Tally:
    """What the trials tried and what held."""

    trials: int = 0
    kills: dict[str, int] = field(default_factory=lambda: {"acquire": 0, "boot": 0, "release": 0, "expiry": 0})
    leaked: int = 0
    lost: int = 0
    unsettled: int = 0
    double_billed_seconds: float = 0.0
    over_billed: list[tuple[str, float]] = field(default_factory=list)
    under_billed: list[tuple[str, float]] = field(default_factory=list)
    instances: int = 0
    max_gap: float = 0.0
    ready: int = 0  # bookings whose machine became reachable
    ready_dms_missing: list[int] = field(default_factory=list)
    ready_dms_doubled: list[int] = field(default_factory=list)


class CrashRig:
    """The fakes, the fake Slack, the ledger and the bot process of one series of trials."""

    def __init__(self, tmp: Path, seed: int, latency: float = 0.4) -> None:
        self.tmp, self.random = tmp, random.Random(seed)
        self.api = FakeSlackApi()
        self.api.start()
        self.lambda_ = FakeLambda("lambda-crash-key", launch_window=0.0)
        self.runpod = FakeRunPod("runpod-crash-key")
        for fake in (self.lambda_, self.runpod):
            fake.start()
            fake.latency = latency
        self.latency = latency
        self.env = {"LAMBDA_API_KEY": "lambda-crash-key", "LAMBDA_API_URL": f"{self.lambda_.url}/api/v1",
                    "RUNPOD_API_KEY": "runpod-crash-key", "RUNPOD_API_URL": f"{self.runpod.url}/v2"}
        self.db = Database(f"sqlite:///{tmp / 'e2e.db'}")
        self.bot: RunningBot | None = None
        self.tally = Tally()
        self._last_lambda_kill = False

    # -- process ------------------------------------------------------------------------------------------
    def start(self) -> RunningBot:
        """Start (or restart) gpubot on the same ledger; it reconciles before it serves."""
        self.bot = start_bot(self.tmp, CONFIG, self.api, self.env, append_log=True)
        return self.bot

    def kill(self) -> None:
        """SIGKILL the bot and reap it."""
        assert self.bot is not None
        self.bot.process.send_signal(signal.SIGKILL)
        self.bot.process.wait(10)

    def close(self) -> None:
        """Stop everything this rig started."""
        if self.bot and self.bot.process.poll() is None:
            self.bot.stop()
        for server in (self.lambda_, self.runpod, self.api):
            server.stop()
        self.db.dispose()

    # -- one trial ----------------------------------------------------------------------------------------
    def trial(self) -> None:
        """Restart, settle, check, then act and SIGKILL at a random moment of the act."""
        self.start()
        self.settle_and_check()
        active = self.bookings(BookingState.ACTIVE)
        kind = self.random.choice(["acquire", "boot"] if len(active) < 2 else ["release", "expiry"]
                                  if len(active) > 4 else ["acquire", "boot", "release", "expiry"])
        if self.tally.trials == 1 and self.tally.kills["boot"] == 0:
            kind = "boot"  # every series, the short one too, kills at least once while a machine boots
        window = getattr(self, f"_{kind}")(active)
        time.sleep(self.random.uniform(0, window))
        self.kill()
        self.tally.trials += 1
        self.tally.kills[kind] += 1

    def _acquire(self, active: list[Booking]) -> float:
        # The Lambda adapter spaces launches 12 s apart within one process: a booking requeued by a kill on
        # Lambda is relaunched at the next start, so that trial books on RunPod.
        provider = "runpod" if self._last_lambda_kill else self.random.choice(["lambda", "runpod"])
        self._last_lambda_kill = provider == "lambda"
        assert self.bot is not None
        self.bot.command(f"book h100x1 6h --provider {provider}", user=self.random.choice(USERS))
        return 4 * self.latency + 0.5

    def _boot(self, active: list[Booking]) -> float:
        """Book, wait until the booking is seen booting, and give the kill a window over its polls and ready DM."""
        newest = max((b.id for b in self.bookings(*BookingState)), default=0)
        self._acquire(active)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if any(b.id > newest and b.state != BookingState.ACQUIRING for b in self.bookings(*IN_FLIGHT[1:],
                                                                                            BookingState.ACTIVE)):
                break
            time.sleep(0.05)
        self._last_lambda_kill = False  # launched already: the next start relaunches nothing
        return BOOT_WINDOW

    def _release(self, active: list[Booking]) -> float:
        self._last_lambda_kill = False
        booking = self.random.choice(active)
        assert self.bot is not None
        self.bot.command(f"release {booking.id}", user=booking.owner)
        return 2 * self.latency + 0.4

    def _expiry(self, active: list[Booking]) -> float:
        self._last_lambda_kill = False
        booking = self.random.choice(active)
        with self.db.session() as session:
            repo.set_fields(booking.id, session=session, ends_at=datetime.now(UTC) - timedelta(seconds=1))
        return TICK + 2 * self.latency + 0.4

    # -- checks -------------------------------------------------------------------------------------------
    def bookings(self, *states: BookingState) -> list[Booking]:
        """Bookings in the given states, read from the ledger."""
        with self.db.session() as session:
            return repo.list_bookings(session=session, states=states)

    def settle_and_check(self, timeout: float = 40.0) -> None:
        """Wait until no booking is in flight, then count leaked instances, lost bookings, overlapping bills."""
        deadline = time.monotonic() + timeout
        while (pending := self.in_flight()) and time.monotonic() < deadline:
            time.sleep(0.2)
        if pending:
            self.tally.unsettled += 1
            return
        live = self.live_names()
        expected = {b.instance_name for b in self.bookings(BookingState.ACTIVE)}
        self.tally.leaked += len(live - expected)
        self.tally.lost += len(expected - live)
        self.tally.double_billed_seconds = self.overlap_seconds()

    def in_flight(self) -> list[Booking]:
        """Bookings being acquired or released, or due to expire (the expiry job is about to release them)."""
        now = datetime.now(UTC)
        due = [b for b in self.bookings(BookingState.ACTIVE) if b.ends_at and _utc(b.ends_at) <= now]
        return self.bookings(*IN_FLIGHT) + due

    def live_names(self) -> set[str]:
        """Names of the instances the fake clouds run now (ours only)."""
        with self.lambda_.lock, self.runpod.lock:
            names = [i["name"] for i in self.lambda_.instances.values() if i["status"] != "terminated"]
            names += [p["name"] for p in self.runpod.pods.values()]
        return {n for n in names if parse_instance_tag(n)}

    def intervals(self) -> dict[str, list[tuple[datetime, datetime]]]:
        """Billed stretches per instance name."""
        with self.db.session() as session:
            rows = session.exec(select(UsageIntervalRow)).all()
        stretches: dict[str, list[tuple[datetime, datetime]]] = {}
        for row in rows:
            stretches.setdefault(row.instance_name, []).append((_utc(row.start), _utc(row.end)))
        return stretches

    def overlap_seconds(self) -> float:
        """Seconds billed more than once for the same instance."""
        total = 0.0
        for stretches in self.intervals().values():
            ordered = sorted(stretches)
            reach = ordered[0][1]
            for start, end in ordered[1:]:
                total += max(0.0, (min(end, reach) - start).total_seconds())
                reach = max(reach, end)
        return total

    def finish(self) -> Tally:
        """Restart once more, release everything, stop cleanly, and compare billed with run seconds."""
        bot = self.start()
        self.settle_and_check()
        for booking in self.bookings(BookingState.ACTIVE):
            bot.command(f"release {booking.id}", user=booking.owner)
        deadline = time.monotonic() + 30
        while self.bookings(BookingState.ACTIVE, *IN_FLIGHT) and time.monotonic() < deadline:
            time.sleep(0.2)
        bot.stop()
        self.compare_billing()
        self.count_ready_dms()
        return self.tally

    def count_ready_dms(self) -> None:
        """Every booking whose machine became reachable got its ready DM, once."""
        texts = [c.args.get("text", "") for c in self.api.calls_to("chat.postMessage")]
        for booking in self.bookings(*BookingState):
            if booking.ready_at is None:
                continue
            self.tally.ready += 1
            sent = sum(text.startswith(f"{booking.label} is ready") for text in texts)
            if sent == 0:
                self.tally.ready_dms_missing.append(booking.id)
            elif sent > 1:
                self.tally.ready_dms_doubled.append(booking.id)

    def compare_billing(self) -> None:
        """Every instance's billed seconds against the fake cloud's own record, within a tick."""
        billed = {name: sum((e - s).total_seconds() for s, e in spans) for name, spans in self.intervals().items()}
        runs: list[Run] = [*self.lambda_.runs.values(), *self.runpod.runs.values()]
        self.tally.instances = len(runs)
        self.tally.double_billed_seconds = self.overlap_seconds()
        for run in runs:
            ran = run.seconds(datetime.now(UTC))
            gap = billed.get(run.name, 0.0) - ran
            self.tally.max_gap = max(self.tally.max_gap, abs(gap))
            if gap > TICK:
                self.tally.over_billed.append((run.name, round(gap, 2)))
            elif gap < -TICK:
                self.tally.under_billed.append((run.name, round(gap, 2)))


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)
