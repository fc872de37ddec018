"""Replace and `max_gpus_per_user` through `gpubot serve` and signed HTTP (issue #27): an overheating booking's
replacement may take its owner past the limit by exactly the hot booking's GPUs, `/gpu status` and App Home say the
hot one is being replaced and until when (so does the hot booking's own message, updated), and a second Replace
that would go further is refused with the reason."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta

import httpx
import pytest
from gpubot.db import bookings as repo
from gpubot.domain.model import BookingState

from tests.e2e.server_kit import agent_token, as_shown, book, config, dm, offer, serving, settle, sim, wait_call

CONFIG = config(
    alerts=True,
    booking={"max_gpus_per_user": 4},
    health={"max_temp_c": 85, "telemetry_stale_after": "4s", "for": "0s", "min_open": "1h", "replace_grace": "30m"},
    scheduler={"tick": "1s"},
    providers={"sim": sim(offer(), offer(region="sim-2", price=2.5), telemetry=False)})


@pytest.fixture(scope="module")
def bot(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("replace-limit"), CONFIG) as running:
        yield running


def _running(bot, owner: str) -> tuple[int, str]:
    """A running a100x2 booking of `owner`: its id and its agent token."""
    label = book(bot, owner, "a100x2 2h --region sim-1")
    token = agent_token(bot, owner, label)  # from the no-telemetry DM, telemetry_stale_after after it is ready
    return int(label[1:]), token


def _overheat(bot, owner: str, booking_id: int, token: str) -> None:
    """Push 95 °C until the booking's overheat alert is open (the owner is told, with the Replace button)."""
    deadline = time.monotonic() + 20
    while not [c for c in bot.api.calls_to("chat.postMessage") if c.args.get("channel") == owner
               and f"#{booking_id} GPU 0 is at 95 °C" in c.args.get("text", "")]:
        assert time.monotonic() < deadline, f"#{booking_id} did not page"
        body = {"gpus": [{"index": i, "util": 90.0, "temp_c": 95.0} for i in range(2)]}
        assert httpx.post(f"{bot.url}/api/telemetry", content=json.dumps(body), timeout=5, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"}).status_code == 204
        time.sleep(0.5)


def _bookings(bot, owner: str):
    with bot.db.session() as session:
        return repo.list_bookings(session=session, owner=owner)


def test_replace_stretches_the_limit_by_the_hot_booking_only_and_status_shows_until_when(bot):
    first, first_token = _running(bot, "UOWN")
    second, second_token = _running(bot, "UOWN")  # 4 GPUs: the limit
    _overheat(bot, "UOWN", first, first_token)
    assert bot.click("booking_replace", first, "UOWN", "1.000001").status_code == 200
    ready = as_shown(dm(bot, "UOWN", f"It replaces #{first}"))
    new = int(re.search(r"#(\d+) is ready", ready).group(1))
    assert sum(b.count for b in _bookings(bot, "UOWN") if b.state == BookingState.ACTIVE) == 6  # 4 + the hot 2

    assert bot.command("status", user="UOWN").status_code == 200
    shown = as_shown(wait_call(bot, "response_url", f"being replaced by #{new}")["text"])
    with bot.db.session() as session:
        replacement = repo.get_booking(new, session=session)
    until = (replacement.ready_at + timedelta(minutes=30)).strftime("%Y-%m-%d %H:%M")
    line = next(line for line in shown.split("\n") if f"*#{first}*" in line)
    assert line.endswith(f", being replaced by #{new} (released by {until} UTC at the latest)"), line
    assert "being replaced" not in next(line for line in shown.split("\n") if f"*#{second}*" in line)
    assert bot.event({"type": "app_home_opened", "user": "UOWN", "tab": "home"}).status_code == 200
    view = wait_call(bot, "views.publish", '"user_id": "UOWN"', f"being replaced by #{new}")["view"]
    home = as_shown(json.dumps(json.loads(view) if isinstance(view, str) else view, ensure_ascii=False))
    assert f", being replaced by #{new} (released by {until} UTC at the latest)" in home  # Home says it as status does
    with bot.db.session() as session:
        hot = repo.get_booking(first, session=session)
    sentence = f"🔁 Being replaced by #{new} (released by {until} UTC at the latest)."
    update = wait_call(bot, "chat.update", f"*#{first}*", sentence)  # its own message says it too, redrawn
    assert (update["channel"], update["ts"]) == (hot.channel, hot.message_ts)
    assert sentence in as_shown(update["text"]).split("\n")

    _overheat(bot, "UOWN", second, second_token)  # a second Replace would make 8 of the 4 + 2 allowed
    before = len(_bookings(bot, "UOWN"))
    assert bot.click("booking_replace", second, "UOWN", "1.000002").status_code == 200
    refusal = as_shown(wait_call(bot, "response_url", f"Replacing #{second}")["text"])
    assert refusal.startswith(f"⚠️ Replacing #{second} would bring its owner to 8 GPUs, past the limit of 4 per person "
                              f"plus the 2 of #{second} while it is replaced (6).")
    settle(bot)
    assert len(_bookings(bot, "UOWN")) == before

