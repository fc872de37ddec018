"""gpubot serve over signed HTTP: a spot booking that finds no spot capacity for `[spot] fallback_after` launches on
demand; its owner is told why, where and at what price, and the ledger bills it at that on-demand price."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from gpubot.db import bookings as repo

from tests.e2e.server_kit import book, config, dm, offer, serving, settle, sim, wait_call

# `spot` sells 2 spot A100s (Bob takes them); `ondemand` sells A100s on demand only.
CONFIG = config(alerts=True, scheduler={"tick": "1s"}, acquire={"poll_every": "1s", "backoff_max": "1s"},
                spot={"fallback_after": "3s"},
                providers={"spot": sim(offer(region="spot-1", count=2, spot_price=0.9)),
                           "ondemand": sim(offer(region="od-1", price=1.5))})


@pytest.fixture(scope="module")
def bot(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("spot-fallback"), CONFIG) as running:
        yield running


def _booking(bot, label: str):
    with bot.db.session() as session:
        return repo.get_booking(int(label.lstrip("#")), session=session)


def test_a_spot_booking_with_no_spot_capacity_launches_on_demand_and_its_owner_hears_the_price(bot):
    taken = book(bot, "UBOB", "a100x2 2h --spot")
    dm(bot, "UBOB", f"{taken} is ready")
    assert _booking(bot, taken).spot  # Bob holds every spot A100

    label = book(bot, "UALICE", "a100x2 2h --spot")

    told = dm(bot, "UALICE", f"{label} found no spot capacity")
    assert re.fullmatch(rf"{label} found no spot capacity for 2× a100 in \S+ \(the limit is 3s\), so it launched on "
                        r"demand on ondemand od-1 at \$1\.50 per GPU-hour \(\$3\.00/h\), billed at that price\. "
                        r"On-demand machines are not taken back\.", told), told
    ready = dm(bot, "UALICE", f"{label} is ready")
    assert "save checkpoints" not in ready  # an on-demand machine is not taken back
    wait_call(bot, "chat.postMessage", f"{label} is ready")
    settle(bot)

    placed = _booking(bot, label)
    assert (placed.state.value, placed.spot, placed.provider, placed.price_per_gpu_hour) == (
        "active", False, "ondemand", Decimal("1.50"))
    fell_back = [c for c in bot.api.calls_to("chat.postMessage")
                 if c.args["channel"] == "UALICE" and "found no spot capacity" in c.args.get("text", "")]
    assert len(fell_back) == 1  # told once
