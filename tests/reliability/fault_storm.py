"""A scripted storm of bookings against the real AutoDL, Lambda and RunPod adapters while their fakes misbehave.

The engine runs in-process on a SQLite ledger with a controllable clock; the adapters talk HTTP to the fakes on
127.0.0.1 and never really sleep (their retry waits are skipped). Every booking gets a fault injected first.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from gpubot.db import bookings as repo
from gpubot.domain.errors import UserError
from gpubot.domain.model import BookingState, parse_instance_tag
from gpubot.providers.autodl.adapter import AutoDL
from gpubot.providers.lambda_cloud.adapter import LambdaCloud
from gpubot.providers.registry import policy_from_dict
from gpubot.providers.runpod.adapter import RunPod
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.acquisition.booting import follow_booting
from gpubot.scheduling.acquisition.queue import drain
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.breakers import breakers_of
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.lifecycle.reconcile import reconcile

from tests.conftest import Clock
from tests.engine_kit import deliver, make_engine
from tests.fakes.autodl_api import FakeAutoDL
from tests.fakes.lambda_api import FakeLambda
from tests.fakes.runpod_api import FakeRunPod

__all__ = ["FAULTS", "Storm", "StormTally"]

# (fault kind, options): every fault class the fakes can inject
FAULTS = [("refuse", {}), ("timeout", {"delay": 0.6}), ("status", {"status": 500}), ("status", {"status": 502}),
          ("status", {"status": 503}), ("ratelimit", {"retry_after": "1"}), ("ratelimit", {}),
          ("malformed", {}), ("extra_fields", {}), ("lost_response", {})]
PATHS = {"lambda": ("instance-types", "launch"), "runpod": ("pods",), "autodl": ("gpu_stock", "deployment$")}
POLICY = {
    "team": {"admins": ["UADMIN"], "alerts_channel": "CALERTS"},
    "budget": {"monthly": 100000000, "over_budget": "warn"},
    "booking": {"max_gpus_per_user": 100000},
    "acquire": {"give_up_after": "3m", "poll_every": "5s", "backoff_max": "20s", "probe_timeout": "5s",
                "offer_cache": "0s"},
    "fx": {"CNY": 0.14},
    "providers": {"lambda": {"kind": "lambda", "regions": ["us-east-1"]},
                  "runpod": {"kind": "runpod"},
                  "autodl": {"kind": "autodl", "currency": "CNY", "regions": ["westDC2"]}},
}


@dataclass
class StormTally:
    """What the storm tried and what held."""

    bookings: int = 0
    faults: Counter = field(default_factory=Counter)
    placed: int = 0
    failed_with_alert: int = 0
    failed_silently: int = 0
    refused_with_message: int = 0
    stuck_acquiring: int = 0
    unhandled: list[str] = field(default_factory=list)
    orphans_terminated: int = 0
    leaked: int = 0
    breaker_changes: Counter = field(default_factory=Counter)


class Storm:
    """The fakes, the adapters and the engine of one storm."""

    def __init__(self, tmp: Path, seed: int) -> None:
        self.random, self.clock = random.Random(seed), Clock()
        self.fakes = {"lambda": FakeLambda("lk", launch_window=0.0), "runpod": FakeRunPod("rk"),
                      "autodl": FakeAutoDL("ak")}
        for fake in self.fakes.values():
            fake.start()
        self.fakes["autodl"].set_stock("westDC2", "A100-SXM4-80GB", idle=100000)
        policy = policy_from_dict(POLICY)
        quick = {"sleep": lambda _s: None, "timeout": 0.3}
        fresh = {"catalog_ttl": 0.0}  # every probe reaches the fakes, so every fault can hit one
        adapters = {"lambda": LambdaCloud("lambda", policy.providers["lambda"], "lk",
                                          f"{self.fakes['lambda'].url}/api/v1", launch_interval=0, **quick, **fresh),
                    "runpod": RunPod("runpod", policy.providers["runpod"], "rk", f"{self.fakes['runpod'].url}/v2",
                                     **quick, **fresh),
                    "autodl": AutoDL("autodl", policy.providers["autodl"], "ak", self.fakes["autodl"].url, **quick)}
        self.engine: Engine = make_engine(f"sqlite:///{tmp / 'storm.db'}", policy, self.clock, adapters)
        self.tally = StormTally()
        self.ids: list[int] = []

    def close(self) -> None:
        """Stop the fakes and the ledger."""
        for fake in self.fakes.values():
            fake.stop()
        self.engine.db.dispose()

    def run(self, bookings: int) -> StormTally:
        """Book `bookings` times under faults, with one outage long enough to open a breaker; then settle."""
        for i in range(bookings):
            if i == bookings // 2:
                self.outage("lambda")
            self.inject()
            self.book_one(i)
            self.clock.advance(seconds=7)
            self.jobs()
        self.settle()
        return self.tally

    def inject(self) -> None:
        """One random fault on one random fake, hitting 1–4 matching requests."""
        provider = self.random.choice(sorted(self.fakes))
        kind, options = self.random.choice(FAULTS)
        self.fakes[provider].inject(kind, path=self.random.choice(PATHS[provider]), times=self.random.randint(1, 4),
                                    **options)
        self.tally.faults[f"{kind}{options.get('status', '')}"] += 1

    def outage(self, provider: str) -> None:
        """Lambda answers 503 to everything for a while: its breaker must open, then close after the cool-down."""
        fault = self.fakes[provider].inject("status", status=503, times=10_000)
        self.tally.faults["status503 (outage)"] += 1
        for i in range(8):
            self.book_one(10_000 + i, provider)
            self.clock.advance(seconds=2)
        with self.fakes[provider].lock:
            self.fakes[provider].faults.remove(fault)
        self.clock.advance(seconds=breakers_of(self.engine).rule.cooldown.total_seconds() + 1)
        self.book_one(20_000, provider)

    def book_one(self, i: int, provider: str | None = None) -> None:
        """Book a100-80g x8 through the engine, counting a refusal or an escaped exception."""
        ask = BookingAsk(owner=f"U{i % 7}", gpu="a100-80g", count=8, duration=timedelta(hours=2), provider=provider)
        self.tally.bookings += 1
        try:
            booked = book(self.engine, ask)
        except UserError as exc:
            self.tally.refused_with_message += bool(str(exc).strip())
            return
        except Exception as exc:
            self.tally.unhandled.append(f"book: {type(exc).__name__}: {exc}")
            return
        self.ids.append(booked.booking.id)
        self.guarded(lambda: acquire(self.engine, booked.booking.id))

    def jobs(self) -> None:
        """What the scheduler runs meanwhile: the queue, and following the machines that boot."""
        self.guarded(lambda: drain(self.engine))
        self.guarded(lambda: follow_booting(self.engine))

    def guarded(self, call) -> None:
        """Run an engine call; an exception escaping it is an unhandled one."""
        try:
            call()
        except Exception as exc:
            self.tally.unhandled.append(f"{type(exc).__name__}: {exc}")

    def settle(self) -> None:
        """Faults stop; queued bookings land or give up; reconcile terminates what lost responses left."""
        for fake in self.fakes.values():
            with fake.lock:
                fake.faults.clear()
        for _ in range(60):
            self.clock.advance(seconds=20)
            self.jobs()
        report = reconcile(self.engine)
        self.tally.orphans_terminated = len(report.orphans)
        self.count_outcomes()

    def count_outcomes(self) -> None:
        """Where each booking ended, whether on-call heard of each failure, and what still runs untracked."""
        deliver(self.engine)  # on-call hears of failures through the outbox
        alerts = {key for _kind, key, *_rest in self.engine.notifier.alerts}
        with self.engine.db.session() as session:
            final = [repo.get_booking(i, session=session) for i in self.ids]
        for booking in final:
            if booking.state == BookingState.ACTIVE:
                self.tally.placed += 1
            elif booking.state == BookingState.FAILED:
                if f"gpubot:acquire:{booking.id}" in alerts:
                    self.tally.failed_with_alert += 1
                else:
                    self.tally.failed_silently += 1
            else:
                self.tally.stuck_acquiring += 1
        active = {b.instance_name for b in final if b.state == BookingState.ACTIVE}
        self.tally.leaked = len(self.live_names() - active)
        self.tally.breaker_changes = Counter(f"{a}→{b}" for _p, a, b, _t in breakers_of(self.engine).changes)

    def live_names(self) -> set[str]:
        """Our instances still running at the three fakes."""
        lam, pod, adl = self.fakes["lambda"], self.fakes["runpod"], self.fakes["autodl"]
        names = [i["name"] for i in lam.instances.values() if i["status"] != "terminated"]
        names += [p["name"] for p in pod.pods.values()] + [d.name for d in adl.live()]
        return {n for n in names if parse_instance_tag(n)}
