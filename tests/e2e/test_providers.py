"""`gpubot serve` against AutoDL, Lambda, RunPod and AWS (moto) fakes that boot: for each, `/gpu book` over signed
HTTP → the booking message says booting on that provider → ready → the ready DM carries that provider's SSH line →
the served agent, started by the provider's own start command on the fake's machine (stub nvidia-smi: idle GPUs),
pushes samples → an idle reminder → release → the fake reports the instance gone and the ledger bills it.
And a machine whose agent cannot read its GPUs stays up and reachable while its owner is told telemetry is missing.

Figures (time from `/gpu book` to the ready DM, and boot polls) are printed for docs/lifecycle.md."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.db import ledger
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.model import Booking, BookingState

from tests.e2e.provider_clouds import Clouds, provider_config
from tests.e2e.server_kit import RunningBot, config, dm, free_port, serving, wait_call
from tests.reliability.figures import record

pytestmark = pytest.mark.slow  # a long module: its xdist group is handed out first (tests/conftest.py)

CONFIG = config(scheduler={"tick": "1s"},
                acquire={"ready_poll_every": "1s", "ready_poll_max": "1s", "ready_timeout": "2m"},
                idle={"for": "3s", "grace": "10m"}, health={"telemetry_stale_after": "8s"},
                providers=None) + provider_config()

# provider → (what to book on it, the SSH line its ready DM carries)
CASES = {
    "autodl": ("rtx4090x1", r"ssh -p \d+ root@connect\.westDC2\.autodl\.com"),
    "lambda": ("a100x1", r"ssh ubuntu@198\.51\.100\.\d+"),
    "runpod": ("rtx4090x1", r"ssh root@203\.0\.113\.\d+ -p \d+"),
    "aws": ("a10gx1", r"ssh ubuntu@\d+\.\d+\.\d+\.\d+"),
}


@pytest.fixture(scope="module")
def clouds() -> Iterator[Clouds]:
    started = Clouds().start()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def bot(tmp_path_factory, clouds: Clouds) -> Iterator[RunningBot]:
    port = free_port()
    env = {**clouds.env(), "GPUBOT_PORT": str(port), "GPUBOT_PUBLIC_URL": f"http://127.0.0.1:{port}"}
    with serving(tmp_path_factory.mktemp("providers"), CONFIG, extra_env=env) as running:
        yield running


def _booking(bot: RunningBot, booking_id: int) -> Booking:
    with bot.db.session() as session:
        return repo.get_booking(booking_id, session=session)


def _samples(bot: RunningBot, booking_id: int) -> int:
    with bot.db.session() as session:
        since = datetime.now(UTC) - timedelta(hours=1)
        return len(telemetry_repo.samples_of([booking_id], since, session=session)[booking_id])


def _book(bot: RunningBot, provider: str, user: str) -> tuple[int, float]:
    """Book on `provider` as `user`; the booking id once its message says booting, and when the command went."""
    shape = CASES[provider][0]
    sent = time.monotonic()
    assert bot.command(f"book {shape} 1h --provider {provider}", user=user).status_code == 200
    assert _until(lambda: _owned(bot, user), 10), f"no booking of {user}"
    booking_id = max(b.id for b in _owned(bot, user))
    wait_call(bot, "chat.update", f"*#{booking_id}*", f"booting on {provider} ")
    return booking_id, sent


def _owned(bot: RunningBot, user: str) -> list[Booking]:
    with bot.db.session() as session:
        return repo.list_bookings(session=session, owner=user)


def _until(check, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(check())


@pytest.mark.parametrize("provider", list(CASES))
def test_book_boot_ready_dm_agent_idle_release_and_bill(bot: RunningBot, clouds: Clouds, provider: str) -> None:
    user = f"U{provider.upper()}"
    booking_id, sent = _book(bot, provider, user)
    ready = dm(bot, user, f"#{booking_id} is ready", timeout=45)
    to_dm = time.monotonic() - sent
    booking = _booking(bot, booking_id)
    assert booking.state == BookingState.ACTIVE and booking.provider == provider
    assert re.fullmatch(CASES[provider][1], booking.connect) and f"Connect with `{booking.connect}`" in ready
    record("provider e2e", f"{provider} fake: /gpu book → ready DM {to_dm:.2f} s (launch → reachable "
                           f"{(booking.ready_at - booking.started_at).total_seconds():.2f} s), "
                           f"{booking.boot_polls} boot polls")

    machine = clouds.machine_of(provider, booking.instance_id)
    assert machine is not None
    assert _until(lambda: _samples(bot, booking_id) > 0, 30), machine.read("opt/gpubot/agent.log") + \
        machine.read("gpubot-agent.service.log")
    dm(bot, user, f"#{booking_id} ({booking.count}× {booking.gpu} on {provider}) has been idle")

    bot.command(f"release {booking_id}", user=user)
    wait_call(bot, "chat.update", f"*#{booking_id}*", "released")
    assert _until(lambda: clouds.terminated(provider, booking.instance_id), 15), f"{provider} still runs it"
    released = _booking(bot, booking_id)
    with bot.db.session() as session:
        billed = ledger.list_intervals(booking_id, session=session)
    assert released.state == BookingState.RELEASED and billed
    assert billed[0].start == released.started_at and billed[-1].end == released.released_at
    assert all(i.price_per_gpu_hour > 0 and i.provider == provider for i in billed)


# provider → (what breaks the agent on its machines, what the agent's log then says)
BROKEN = {
    "autodl": (lambda machine: machine.no_driver(), "nvidia-smi failed (exit 9)"),  # no GPU driver
    "runpod": (lambda machine: machine.without("python3"), "python3: not found"),  # cannot download nor run it
}


@pytest.mark.parametrize("provider", list(BROKEN))
def test_a_machine_whose_agent_cannot_run_stays_up_and_its_owner_hears_telemetry_is_missing(
        bot: RunningBot, clouds: Clouds, provider: str) -> None:
    fake, (breaks, logged) = getattr(clouds, provider), BROKEN[provider]
    user = f"UBROKEN{provider.upper()}"
    fake.machine_setup = breaks
    try:
        booking_id, _sent = _book(bot, provider, user)
        dm(bot, user, f"#{booking_id} is ready", timeout=45)
    finally:
        fake.machine_setup = lambda machine: None
    told = dm(bot, user, f"#{booking_id} has sent no GPU telemetry for 8s", timeout=30)
    assert "Is the gpubot agent running?" in told
    booking = _booking(bot, booking_id)
    machine = clouds.machine_of(provider, booking.instance_id)
    assert booking.state == BookingState.ACTIVE and _samples(bot, booking_id) == 0
    assert machine.alive() and logged in machine.read("opt/gpubot/agent.log"), machine.read("console.log")
    assert not clouds.terminated(provider, booking.instance_id)
    bot.command(f"release {booking_id}", user=user)
    assert _until(lambda: clouds.terminated(provider, booking.instance_id), 15)
