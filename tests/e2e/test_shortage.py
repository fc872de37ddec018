"""gpubot serve, driven over signed HTTP: a watch DMs Book now when capacity frees up, the click books that
offer; an `or` booking lands on the free alternative and says what to change."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from gpubot.db import bookings as repo

from tests.e2e.server_kit import RunningBot, config, offer, serving, sim

CONFIG = config(acquire={"poll_every": "1s"}, scheduler={"tick": "1s"},
                providers={"sim": sim(offer(count=4, price=1.0), offer("rtx4090", "sim-2", 8, 2.5))})


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> RunningBot:
    with serving(tmp_path_factory.mktemp("shortage"), CONFIG) as running:
        yield running


def _wait(bot: RunningBot, method: str, *needles: str, channel: str | None = None, timeout: float = 15):
    found: list = []

    def seen(calls):
        found[:] = [c for c in calls if c.method == method and (channel is None or c.args.get("channel") == channel)
                    and all(n in json.dumps(c.args, ensure_ascii=False) for n in needles)]
        return bool(found)

    assert bot.api.wait_for(seen, timeout), f"no {method} with {needles}"
    return found[-1]


def test_watch_dms_book_now_and_the_click_books_that_offer_then_or_lands_on_the_alternative(bot):
    bot.command("book a100x4 1h", user="UBOB")
    _wait(bot, "chat.postMessage", "#1 is ready", channel="UBOB")
    bot.command("watch a100x4 --for 1h", user="UALICE")  # `--for` is the watched duration, as `for 1h` is
    assert "when 4× A100 40GB can start for 1h" in _wait(bot, "response_url", "Watch #1").args["text"]
    bot.command("watch", user="UALICE")
    assert "#1 4× A100 40GB for 1h" in _wait(bot, "response_url", "Your watches").args["text"]

    bot.command("release 1", user="UBOB")
    dm = _wait(bot, "chat.postMessage", "Watch #1", "watch_book", channel="UALICE")
    assert "is free on sim sim-1 at $1.00/GPU-h ($4.00/h)" in dm.args["text"]
    bot.click("watch_book", 1, user="UALICE", message_ts=dm.result["ts"], channel="UALICE")
    _wait(bot, "chat.postMessage", "#2 is ready", channel="UALICE")
    with bot.db.session() as session:
        assert repo.get_booking(2, session=session).duration == timedelta(hours=1)  # the watched duration
    assert "active on sim sim-1" in _wait(bot, "chat.update", "#2").args["text"]

    bot.command("book a100x4 or rtx4090x2 2h", user="UCAROL")
    posted = _wait(bot, "chat.postMessage", "*#3*")
    assert "Alternatives (the cheapest free one is taken)" in posted.args["text"]
    assert "4× A100 40GB ≈ $8.00 on sim sim-1" in posted.args["text"]  # cheaper per hour, but #2 holds it
    assert "🟢 2× RTX 4090 24GB ≈ $10.00 on sim sim-2" in posted.args["text"]
    ready = _wait(bot, "chat.postMessage", "#3 is ready", channel="UCAROL").args["text"]
    assert "Landed on 2× RTX 4090 24GB (48 GiB) instead of your first choice 4× A100 40GB (160 GiB)" in ready
    assert "gradient accumulation over 4 steps" in ready
