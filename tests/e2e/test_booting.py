"""gpubot serve with simulated clouds that boot: `/gpu book` over signed HTTP → the booking message says
booting (where, for how long) → it turns active with the Connect line → the owner gets the ready DM once; and a
cloud whose machines never become reachable is given up after ready_timeout for the next one."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState

from tests.e2e.server_kit import book, config, offer, serving, settle, sim, wait_job_runs

CONFIG = config(scheduler={"tick": "1s"},
                acquire={"ready_poll_every": "1s", "ready_poll_max": "2s", "ready_timeout": "5s"},
                providers={"stuck": sim(offer("h100", "stuck-1"), never_ready=True),
                           "slow": sim(offer(region="slow-1"), offer("h100", "slow-1", price=3.0), boot_time="3s")})


@pytest.fixture(scope="module")
def bot(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("boot"), CONFIG) as running:
        yield running


def _updates_of(bot, label: str) -> list[str]:
    return [c.args.get("text", "") for c in bot.api.calls
            if c.method in ("chat.postMessage", "chat.update") and f"*{label}*" in c.args.get("text", "")]


def _ready_dms(bot, label: str) -> list:
    return [c for c in bot.api.calls_to("chat.postMessage") if c.args.get("text", "").startswith(f"{label} is ready")]


def _wait_ready(bot, label: str, timeout: float) -> None:
    assert bot.api.wait_for(lambda calls: bool(_ready_dms(bot, label)), timeout), f"no ready DM for {label}"


def _booking(bot, label: str):
    with bot.db.session() as session:
        return repo.get_booking(int(label.lstrip("#")), session=session)


def test_a_booking_boots_visibly_then_shows_connect_and_dms_its_owner_once(bot):
    sent, sent_at = time.monotonic(), datetime.now(UTC)
    label = book(bot, "UALICE", "a100x1 1h")
    assert bot.api.wait_for(lambda calls: any("booting on slow slow-1 ·" in t for t in _updates_of(bot, label)), 10)
    assert any(f"🟡 *{label}*" in t and "— booting on slow slow-1" in t for t in _updates_of(bot, label))
    _wait_ready(bot, label, 15)
    ready_after = time.monotonic() - sent
    active = [c for c in bot.api.calls_to("chat.update") if f"*{label}*" in c.args.get("text", "")
              and "— active on slow slow-1" in c.args["text"]]
    assert active and f"Connect: `ssh gpu@gpubot-{label[1:]}-" in str(active[-1].args.get("blocks"))
    booking = _booking(bot, label)
    assert booking.state == BookingState.ACTIVE and booking.boot_polls >= 2
    # The cloud starts its 3 s boot when it accepts the launch, a moment before the engine stamps started_at; so
    # the floor is measured from the request, and the ledger's own span only has the ceiling.
    assert (booking.ready_at - sent_at).total_seconds() >= 3
    assert 0 < (booking.ready_at - booking.started_at).total_seconds() <= ready_after
    wait_job_runs(bot, "boot_follow", 2)  # more follower passes: the DM is not sent again
    settle(bot)
    dms = _ready_dms(bot, label)
    assert len(dms) == 1 and dms[0].args["channel"] == "UALICE" and f"`{booking.connect}`" in dms[0].args["text"]


def test_a_cloud_that_never_gets_ready_is_given_up_and_the_next_one_takes_the_booking(bot):
    label = book(bot, "UBOB", "h100x1 1h")
    assert bot.api.wait_for(lambda calls: any("booting on stuck stuck-1" in t for t in _updates_of(bot, label)), 10)
    _wait_ready(bot, label, 30)
    booking = _booking(bot, label)
    assert booking.state == BookingState.ACTIVE and booking.provider == "slow"
    with bot.db.session() as session:
        outcomes = [(a.provider, a.outcome) for a in attempt_repo.recent_attempts(booking.id, session=session)]
    assert outcomes == [("stuck", "launched"), ("stuck", "not_ready"), ("slow", "launched")]
    told = [c for c in bot.api.calls_to("chat.postMessage") if c.args.get("channel") == "UBOB"
            and "stuck stuck-1 was not reachable after 5s" in c.args.get("text", "")]
    assert len(told) == 1
    assert any("was not reachable after 5s" in t and "booting on slow slow-1" in t for t in _updates_of(bot, label))
    assert len(_ready_dms(bot, label)) == 1
