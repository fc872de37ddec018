"""The ready timeout against real provider fakes: AutoDL, the cheapest, launches a container that never leaves
`creating`; after `acquire.ready_timeout` gpubot terminates it, records the attempt `not_ready`, tells the owner
why, and the booking lands on Lambda, whose ready DM carries Lambda's SSH line. The stranded minutes are billed."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import timedelta
from itertools import pairwise

import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.db import ledger
from gpubot.domain.model import BookingState

from tests.e2e.server_kit import RunningBot, config, dm, serving, wait_call
from tests.fakes.autodl_api import FakeAutoDL
from tests.fakes.lambda_api import FakeLambda
from tests.reliability.figures import record

CONFIG = config(scheduler={"tick": "1s"},
                acquire={"ready_poll_every": "1s", "ready_poll_max": "1s", "ready_timeout": "5s"},
                providers={"autodl": {"kind": "autodl", "regions": ["westDC2"], "currency": "CNY"},
                           "lambda": {"kind": "lambda", "regions": ["us-east-1"], "ssh_key_name": "gpubot"}},
                fx={"CNY": 0.14})


@pytest.fixture(scope="module")
def clouds() -> Iterator[tuple[FakeAutoDL, FakeLambda]]:
    autodl = FakeAutoDL("autodl-e2e-token", create_time=timedelta(hours=1))  # never leaves `creating`
    lambda_ = FakeLambda("lambda-e2e-key", boot_time=timedelta(seconds=1))
    autodl.start()
    lambda_.start()
    autodl.set_stock("westDC2", "A100-PCIE-40GB", 8, 8)
    yield autodl, lambda_
    autodl.stop()
    lambda_.stop()


@pytest.fixture(scope="module")
def bot(tmp_path_factory, clouds: tuple[FakeAutoDL, FakeLambda]) -> Iterator[RunningBot]:
    autodl, lambda_ = clouds
    env = {"AUTODL_TOKEN": autodl.token, "AUTODL_API_URL": autodl.url, "LAMBDA_API_KEY": lambda_.api_key,
           "LAMBDA_API_URL": f"{lambda_.url}/api/v1"}
    with serving(tmp_path_factory.mktemp("fallback"), CONFIG, extra_env=env) as running:
        yield running


def test_an_autodl_container_never_reachable_is_terminated_and_lambda_takes_the_booking(bot, clouds) -> None:
    autodl, lambda_ = clouds
    sent = time.monotonic()
    assert bot.command("book a100x1 1h", user="UALICE").status_code == 200
    wait_call(bot, "chat.update", "*#1*", "booting on autodl westDC2")
    told = dm(bot, "UALICE", "was not reachable after 5s", timeout=30)
    assert "autodl westDC2" in told
    gave_up = time.monotonic() - sent
    ready = dm(bot, "UALICE", "#1 is ready", timeout=30)
    record("provider e2e", f"ready timeout 5 s: AutoDL given up {gave_up:.2f} s after /gpu book, Lambda's ready DM "
                           f"{time.monotonic() - sent:.2f} s after it")
    assert re.search(r"Connect with `ssh ubuntu@198\.51\.100\.\d+`", ready)

    with bot.db.session() as session:
        booking = repo.get_booking(1, session=session)
        outcomes = [(a.provider, a.outcome) for a in attempt_repo.recent_attempts(1, session=session)]
        billed = ledger.list_intervals(1, session=session)
    assert booking.state == BookingState.ACTIVE and booking.provider == "lambda"
    assert outcomes == [("autodl", "launched"), ("autodl", "not_ready"), ("lambda", "launched")]
    (stranded,) = autodl.runs.values()
    assert stranded.running_at is None and stranded.stopped_at is not None and not autodl.live()
    assert [run.terminated_at for run in lambda_.runs.values()] == [None]
    on_autodl = [i for i in billed if i.provider == "autodl"]
    assert on_autodl and billed[:len(on_autodl)] == on_autodl and on_autodl[-1].end is not None
    assert timedelta(seconds=5) <= on_autodl[-1].end - on_autodl[0].start < timedelta(seconds=30), billed
    assert all(a.end == b.start for a, b in pairwise(on_autodl))  # one unbroken stretch
