"""A booking's message over signed HTTP against `gpubot serve`: drawn from the booking as the ledger holds it at
each update. After a fallback it shows the price and place it is billed at (and that the first quote differed);
after an extension the new length and cost in the headline and the price line; after `/gpu lang zh` the whole
message in Chinese, and a cancelled scheduled booking no longer says when it starts."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.e2e.server_kit import RunningBot, book, config, offer, serving, settle, sim, wait_call

# sim-east is the cheaper region and holds one a100x4 booking; sim-west has room; h100s sell only in sim-h.
CONFIG = config(budget={"monthly": 100000}, providers={"sim": sim(
    offer(region="sim-east", count=4, price=1.99), offer(region="sim-west", count=16, price=2.19),
    offer("h100", "sim-h", 16, 3.00), regions=["sim-east", "sim-west", "sim-h"])})


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> Iterator[RunningBot]:
    with serving(tmp_path_factory.mktemp("booking-message"), CONFIG) as running:
        yield running


def _shown(bot: RunningBot, label: str, *needles: str) -> str:
    """The newest text of booking `label`'s message (posted or updated) that has every needle."""
    calls = [c for c in bot.api.calls if c.method in ("chat.postMessage", "chat.update")
             and f"*{label}*" in c.args.get("text", "")]
    return next(c.args["text"] for c in reversed(calls) if all(n in c.args["text"] for n in needles))


def test_after_a_fallback_the_message_shows_the_billed_price_and_where_it_runs(bot) -> None:
    first = book(bot, "UFIRST", "a100x4 6h")
    wait_call(bot, "chat.update", f"*{first}*", "active on sim sim-east")
    second = book(bot, "USECOND", "a100x4 6h")
    wait_call(bot, "chat.update", f"*{second}*", "active on sim sim-west")
    settle(bot)
    text = _shown(bot, second, "active on sim sim-west")
    assert "≈ $52.56 for 6h at $2.19/GPU-h on sim sim-west" in text, text
    assert "$47.76" not in text and "at $1.99/GPU-h on sim sim-east" not in text, text
    # It was quoted where the first one runs and refused there: the message says so, once, apart.
    assert "it was quoted $1.99/GPU-h on sim sim-east when booked" in text, text


def test_an_extension_shows_the_new_length_and_its_cost_in_the_headline_and_the_price_line(bot) -> None:
    label = book(bot, "UEXT", "h100x1 6h")
    wait_call(bot, "chat.update", f"*{label}*", "active on sim sim-h")
    assert bot.command(f"extend {label[1:]} 2h", user="UEXT").status_code == 200
    text = wait_call(bot, "chat.update", f"*{label}*", "for 8h — active", "Extended by 2h")["text"]
    assert "≈ $24.00 for 8h at $3.00/GPU-h on sim sim-h" in text and "for 6h" not in text, text


def _english_left(text: str) -> list[str]:
    """Latin words in `text` once names, units and codes are taken out: what a Chinese reader would find English."""
    for name in ("sim-west", "sim-east", "sim-h", "sim", "H100", "A100", "80GB", "40GB", "GPU", "US$", "UTC", "team"):
        text = text.replace(name, "")
    return re.findall(r"[A-Za-z]{2,}", text)


def test_after_switching_to_chinese_an_earlier_bookings_next_update_is_all_chinese(bot) -> None:
    label = book(bot, "UZHLATER", "h100x1 6h")
    wait_call(bot, "chat.update", f"*{label}*", "active on sim sim-h")
    assert bot.command("lang zh", user="UZHLATER").status_code == 200
    settle(bot)
    assert bot.command(f"extend {label[1:]} 1h", user="UZHLATER").status_code == 200
    text = wait_call(bot, "chat.update", f"*{label}*", "7 小时")["text"]
    assert "运行中" in text and not _english_left(text), text


def test_a_cancelled_scheduled_booking_says_nothing_of_its_start_nor_english_to_a_chinese_reader(bot) -> None:
    label = book(bot, "UZHSCHED", "a100x1 3h --at tomorrow 09:00")
    wait_call(bot, "chat.postMessage", f"*{label}*", "Starts")
    assert bot.command("lang zh", user="UZHSCHED").status_code == 200
    settle(bot)
    assert bot.command(f"cancel {label[1:]}", user="UZHSCHED").status_code == 200
    text = wait_call(bot, "chat.update", f"*{label}*", "已取消")["text"]
    assert "已在开始前取消" in text and "≈" not in text, text  # no price: it never ran, nothing is billed
    assert not re.search(r"\d{2}:\d{2} UTC", text) and not _english_left(text), text
