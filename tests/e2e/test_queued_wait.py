"""A queued booking's expected wait, over Slack, grounded in the bookings that hold its GPUs: when they end, its
place in the queue, that it gives up first, and no median that contradicts them."""

from __future__ import annotations

import json

import pytest

from tests.e2e.server_kit import as_shown, book, serving

CONFIG = """
[providers.sim]
kind = "simulated"
stock = [{ gpu = "a100", region = "sim-1", count = 8, price = 2.0 }]
"""


@pytest.fixture(scope="module")
def bot(tmp_path_factory):
    """gpubot serve with eight simulated A100s."""
    with serving(tmp_path_factory.mktemp("queued-wait"), CONFIG) as running:
        yield running


def _message_of(bot, label: str, needle: str) -> str:
    """The newest text of the booking message of `label` (posted or updated) that contains `needle`."""
    found: list[str] = []

    def seen(calls) -> bool:
        found[:] = [as_shown(c.args.get("text", "")) for c in calls if c.method in ("chat.postMessage", "chat.update")
                    and label in json.dumps(c.args, ensure_ascii=False) and needle in c.args.get("text", "")]
        return bool(found)

    assert bot.api.wait_for(seen, 20), f"no message of {label} saying {needle!r}"
    return found[-1]


def test_the_wait_names_when_the_holders_end_and_leaves_out_a_median_that_disagrees(bot):
    holder = book(bot, "UALICE", "a100x8 6h")
    _message_of(bot, holder, "ready")  # launched at once: a wait of under a minute now counts in the median
    first = book(bot, "UBOB", "a100x4 2h")
    text = _message_of(bot, first, "is held by")
    assert "A100 40GB is held by 1 running booking: it ends in 6h; this booking is number 1 in the queue." in text
    assert "That is after this booking gives up waiting (in 4h, acquire.give_up_after)." in text
    assert "Expected wait" not in text and "under 1m" not in text
    second = book(bot, "UCAROL", "a100x4 1h")
    assert "this booking is number 2 in the queue" in _message_of(bot, second, "is held by")
