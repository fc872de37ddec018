"""App Home over Slack's wire protocol: opening it publishes the person's bookings with their buttons; a click
there goes down the message buttons' path, acts once however often it arrives, and publishes Home again."""

from __future__ import annotations

import json
import time
from datetime import timedelta

from gpubot.db import bookings as booking_repo
from gpubot.domain.model import BookingState

from tests.e2e.server_kit import RunningBot, book, dm, settle, wait_call


def _home(bot: RunningBot, user: str, *needles: str) -> list[dict]:
    """The blocks of the newest Home published for `user` that mentions every needle (opening it first)."""
    assert bot.event({"type": "app_home_opened", "user": user, "tab": "home"}).status_code == 200
    return _published(bot, user, *needles)


def _published(bot: RunningBot, user: str, *needles: str) -> list[dict]:
    view = wait_call(bot, "views.publish", f'"user_id": "{user}"', *needles)["view"]
    return (json.loads(view) if isinstance(view, str) else view)["blocks"]


def _buttons(blocks: list[dict]) -> dict[tuple[str, int], str]:
    """(action id, booking id) → value of every booking button on Home."""
    return {(e["action_id"], int(e["value"].split("@")[0])): e["value"] for b in blocks if b["type"] == "actions"
            for e in b["elements"] if e["value"][:1].isdigit()}


def _state(bot: RunningBot, booking_id: int):
    with bot.db.session() as session:
        return booking_repo.get_booking(booking_id, session=session)


def _running(bot: RunningBot, booking_id: int, timeout: float = 15):
    deadline = time.monotonic() + timeout
    while (booking := _state(bot, booking_id)).state != BookingState.ACTIVE:
        assert time.monotonic() < deadline, f"#{booking_id} never became active"
        time.sleep(0.05)
    return booking


def test_home_shows_the_book_button_a_running_booking_with_its_buttons_and_the_spend_bar(bot):
    booking_id = int(book(bot, "UHOME1", "h100x1 1h")[1:])
    _running(bot, booking_id)
    blocks = _home(bot, "UHOME1", f"*#{booking_id}* 1× H100 80GB for 1h — active on sim")
    assert {("booking_extend", booking_id), ("booking_release", booking_id)} <= set(_buttons(blocks))
    elements = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert any(e["action_id"] == "home_book" for e in elements)
    text = json.dumps(blocks, ensure_ascii=False)
    assert "Spend this month" in text and "of $5,000.00" in text and "`▒" in text  # its own hold shows


def test_release_from_home_acts_once_however_often_it_arrives_and_home_is_published_again(bot):
    booking_id = int(book(bot, "UHOME2", "h100x1 1h")[1:])
    _running(bot, booking_id)
    blocks = _home(bot, "UHOME2", f"*#{booking_id}*", "booking_release")
    value = _buttons(blocks)[("booking_release", booking_id)]
    for _ in range(3):  # a double click and Slack's retry of it
        assert bot.click_home("booking_release", value, user="UHOME2").status_code == 200
    dm(bot, "UHOME2", f"#{booking_id} released")
    settle(bot)
    released = [c for c in bot.api.calls_to("chat.postMessage")
                if c.args.get("channel") == "UHOME2" and f"#{booking_id} released" in c.args.get("text", "")]
    assert len(released) == 1
    after = _published(bot, "UHOME2", "Ended in the last day", f"#{booking_id}* 1× H100 80GB for 1h — re")
    assert ("booking_release", booking_id) not in _buttons(after)
    assert not [c for c in bot.api.calls if c.method == "chat.postMessage" and c.args.get("channel") == "UHOME2"
                and f"#{booking_id} is already" in c.args.get("text", "")], "a repeated click acts once, silently"


def test_extend_from_home_extends_once_per_rendering(bot):
    booking_id = int(book(bot, "UHOME3", "h100x1 1h")[1:])
    ends = _running(bot, booking_id).ends_at
    value = _buttons(_home(bot, "UHOME3", f"*#{booking_id}*", "booking_extend"))[("booking_extend", booking_id)]
    for _ in range(2):
        assert bot.click_home("booking_extend", value, user="UHOME3").status_code == 200
    settle(bot)
    assert _state(bot, booking_id).ends_at - ends == timedelta(hours=1)
    answers = [c.args["text"] for c in bot.api.calls_to("chat.postMessage") if c.args.get("channel") == "UHOME3"
               and f"#{booking_id}" in c.args.get("text", "") and "now ends" in c.args["text"]]
    assert len(answers) == 1  # the repeat is answered "already made", not extended again
    again = _published(bot, "UHOME3", f"#{booking_id}* 1× H100 80GB for 2h")
    assert _buttons(again)[("booking_extend", booking_id)] != value  # the new rendering's click is a new one


def test_cancel_from_home_cancels_a_waiting_booking(bot):
    booking_id = int(book(bot, "UHOME4", 'h100x1 1h --at "tomorrow 09:00"')[1:])
    value = _buttons(_home(bot, "UHOME4", f"*#{booking_id}*", "booking_cancel"))[("booking_cancel", booking_id)]
    assert bot.click_home("booking_cancel", value, user="UHOME4").status_code == 200
    _published(bot, "UHOME4", "Ended in the last day", f"*#{booking_id}* 1× H100 80GB for 1h — cancelled")
    assert _state(bot, booking_id).state == BookingState.CANCELLED


def test_the_book_button_opens_the_booking_modal(bot):
    blocks = _home(bot, "UHOME5", "home_book")
    assert [e["value"] for b in blocks if b["type"] == "actions" for e in b["elements"]] == ["book"]
    before = {c.args["trigger_id"] for c in bot.api.calls_to("views.open")}
    assert bot.click_home("home_book", "book", user="UHOME5").status_code == 200
    assert bot.api.wait_for(lambda _c: {c.args["trigger_id"] for c in bot.api.calls_to("views.open")} - before, 10)
    [trigger] = {c.args["trigger_id"] for c in bot.api.calls_to("views.open")} - before
    assert "gpu_book_modal" in json.dumps(wait_call(bot, "views.open", trigger)["view"])
