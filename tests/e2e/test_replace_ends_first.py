"""A replacement that ends before it lands, through `gpubot serve` and signed HTTP: the hot booking's message said it
was being replaced; once its replacement gives up (no capacity anywhere else until acquire.give_up_after) or is
cancelled, the message is redrawn through the outbox without that line, in its reader's language, and App Home says
nothing of it either. The only cloud has one region, which a replacement avoids, so it never lands."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import httpx
import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState

from tests.e2e.server_kit import RunningBot, agent_token, book, config, offer, serving, settle, sim, until, wait_call

HEALTH = {"max_temp_c": 85, "telemetry_stale_after": "4s", "for": "0s", "min_open": "1h", "replace_grace": "30m"}


def _config(give_up_after: str) -> str:
    # Rounds every second or two: the give-up is decided at a round, and the default backoff put the one after
    # `give_up_after` near the test's 30 s deadline.
    return config(health=HEALTH, scheduler={"tick": "1s"},
                  acquire={"give_up_after": give_up_after, "poll_every": "1s", "backoff_max": "2s"},
                  providers={"sim": sim(offer(), telemetry=False)})


@pytest.fixture(scope="module")
def gives_up(tmp_path_factory) -> Iterator[RunningBot]:
    with serving(tmp_path_factory.mktemp("replace-gives-up"), _config("6s")) as running:
        yield running


@pytest.fixture(scope="module")
def waits(tmp_path_factory) -> Iterator[RunningBot]:
    with serving(tmp_path_factory.mktemp("replace-cancelled"), _config("4h")) as running:
        yield running


def _hot(bot: RunningBot, owner: str) -> int:
    """A running a100x2 booking of `owner` with an open overheat alert (95 °C pushed by its agent)."""
    label = book(bot, owner, "a100x2 2h")
    token = agent_token(bot, owner, label)  # from the no-telemetry DM, telemetry_stale_after after it is ready
    body = {"gpus": [{"index": i, "util": 90.0, "temp_c": 95.0} for i in range(2)]}
    deadline = time.monotonic() + 20
    while not [c for c in bot.api.calls_to("chat.postMessage") if c.args.get("channel") == owner
               and f"{label} GPU 0 is at 95 °C" in c.args.get("text", "")]:
        assert time.monotonic() < deadline, f"{label} did not page"
        assert httpx.post(f"{bot.url}/api/telemetry", content=json.dumps(body), timeout=5, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"}).status_code == 204
        time.sleep(0.5)
    return int(label[1:])


def _replace_in_chinese(bot: RunningBot, owner: str, hot: int) -> int:
    """Switch `owner` to 简体中文, click Replace on `hot`; the replacement's id, once `hot`'s message says so."""
    assert bot.command("lang zh", user=owner).status_code == 200
    settle(bot)
    assert bot.click("booking_replace", hot, owner, "1.000001").status_code == 200
    new = until(lambda: _replacement(bot, hot))
    wait_call(bot, "chat.update", f"*#{hot}*", f"正由 #{new} 迁移替代")  # "being replaced", as it was before
    return new


def _replacement(bot: RunningBot, hot: int) -> int | None:
    with bot.db.session() as session:
        return next((b.id for b in repo.list_bookings(session=session) if b.replaces == hot), None)


def _state(bot: RunningBot, booking_id: int) -> BookingState:
    with bot.db.session() as session:
        return repo.get_booking(booking_id, session=session).state


def _english_left(text: str) -> list[str]:
    """Latin words left once names, units and codes are taken out: what a Chinese reader would find English."""
    for name in ("sim-1", "sim", "A100", "80GB", "40GB", "GPU", "US$", "UTC", "team"):
        text = text.replace(name, "")
    return re.findall(r"[A-Za-z]{2,}", text)


def _no_longer_replaced(bot: RunningBot, owner: str, hot: int, new: int, ended: str) -> None:
    """`hot`'s message, redrawn in Chinese, says its replacement `new` ended (`ended`) and no longer that it is being
    replaced; App Home says nothing of a replacement either."""
    text = wait_call(bot, "chat.update", f"*#{hot}*", f"替代它的 #{new} {ended}")["text"]
    assert _state(bot, hot) == BookingState.ACTIVE
    assert "迁移替代" not in text and "正在别处寻找" not in text and not _english_left(text), text
    assert text.split("\n")[-1] == f"替代它的 #{new} {ended}；本预订继续运行。", text
    settle(bot)
    newest = [c.args["text"] for c in bot.api.calls_to("chat.update") if f"*#{hot}*" in c.args.get("text", "")][-1]
    assert newest == text  # nothing redrew it since: the message stays as the ledger is now
    assert bot.event({"type": "app_home_opened", "user": owner, "tab": "home"}).status_code == 200
    view = wait_call(bot, "views.publish", f'"user_id": "{owner}"')["view"]  # the first Home it was shown
    home = json.dumps(json.loads(view) if isinstance(view, str) else view, ensure_ascii=False)
    assert f"#{hot}" in home and "迁移替代" not in home, home


def test_a_replacement_that_gives_up_leaves_the_hot_booking_no_longer_being_replaced(gives_up) -> None:
    hot = _hot(gives_up, "UGIVEUP")
    new = _replace_in_chinese(gives_up, "UGIVEUP", hot)
    until(lambda: _state(gives_up, new) == BookingState.FAILED)
    _no_longer_replaced(gives_up, "UGIVEUP", hot, new, "未能找到可用的卡，已放弃")


def test_a_cancelled_replacement_leaves_the_hot_booking_no_longer_being_replaced(waits) -> None:
    hot = _hot(waits, "UCANCEL")
    new = _replace_in_chinese(waits, "UCANCEL", hot)
    assert waits.command(f"cancel {new}", user="UCANCEL").status_code == 200
    until(lambda: _state(waits, new) == BookingState.CANCELLED)
    _no_longer_replaced(waits, "UCANCEL", hot, new, "已取消")
