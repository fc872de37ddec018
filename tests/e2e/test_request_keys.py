"""Per-command request keys (issue #27): a command is known by Slack's trigger_id, not by its bytes, so a copy
re-encoded on the way (fields in another order, another escaping), Slack's retries of it, copies racing it and a
replay after a restart change nothing and answer nothing new — against `gpubot serve` over signed HTTP."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from urllib.parse import parse_qsl, quote, urlencode

import pytest
from gpubot.db import bookings as booking_repo
from gpubot.db import watches as watch_repo

from gpubot.sandbox.requests import slash_command_body
from tests.e2e.server_kit import RunningBot, book, config, serving, settle, sim, start_bot

CONFIG = config(providers={"sim": sim(telemetry=False)})


def _copies(body: bytes) -> list[bytes]:
    """The same command as other bytes: its fields reversed, and escaped with %20 instead of +."""
    fields = parse_qsl(body.decode())
    return [urlencode(fields[::-1]).encode(), urlencode(fields, quote_via=quote).encode()]


def _deliver(bot: RunningBot, body: bytes) -> list[int]:
    """`body` once, then its re-encoded copies as Slack's retries, re-signed, and four racing each other."""
    first, *copies = [body, *_copies(body)]
    codes = [bot.post(first).status_code]
    codes += [bot.post(copy, {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}).status_code
              for copy in copies]
    codes += [bot.post(copy).status_code for copy in copies]
    with ThreadPoolExecutor(4) as pool:
        codes += list(pool.map(lambda n: bot.post(copies[n % 2]).status_code, range(4)))
    return codes


def _replies(bot: RunningBot, key: str) -> list[str]:
    return [c.args.get("text", "") for c in bot.api.calls if c.method == "response_url" and c.args.get("_key") == key]


def _watches(bot: RunningBot, user: str) -> int:
    with bot.db.session() as session:
        return len(watch_repo.list_watches(session=session, owner=user,
                                           states=("active", "fired", "cancelled", "expired")))


def _ends_at(bot: RunningBot, label: str) -> datetime | None:
    with bot.db.session() as session:
        return booking_repo.get_booking(int(label[1:]), session=session).ends_at


@pytest.fixture(scope="module")
def bot(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("keys"), CONFIG) as running:
        yield running


def test_a_watch_delivered_as_retried_reencoded_and_racing_copies_is_made_once(bot) -> None:
    body = slash_command_body("watch a100x8 2h", user="UWATCH", channel="CGPU", trigger_id="trig.watch.1",
                              response_url=bot.api.response_url("watch1"))
    assert _watches(bot, "UWATCH") == 0
    assert _deliver(bot, body) == [200] * 9
    settle(bot)
    assert _watches(bot, "UWATCH") == 1
    assert len(_replies(bot, "watch1")) == 1 and "Watch #" in _replies(bot, "watch1")[0]


def test_an_extend_delivered_as_reencoded_copies_extends_once(bot) -> None:
    label = book(bot, "UEXT", "a100x1 1h")
    deadline = time.monotonic() + 20
    while (before := _ends_at(bot, label)) is None:  # it ends 1 h after it started
        assert time.monotonic() < deadline, f"{label} never started"
        time.sleep(0.05)
    body = slash_command_body(f"extend {label} 1h", user="UEXT", channel="CGPU", trigger_id="trig.extend.1",
                              response_url=bot.api.response_url("extend1"))
    assert _deliver(bot, body) == [200] * 9
    settle(bot)
    assert _ends_at(bot, label) - before == timedelta(hours=1)
    assert len(_replies(bot, "extend1")) == 1 and "now ends" in _replies(bot, "extend1")[0]


def test_a_lang_delivered_as_reencoded_copies_answers_once(bot) -> None:
    body = slash_command_body("lang zh", user="ULANG", channel="CGPU", trigger_id="trig.lang.1",
                              response_url=bot.api.response_url("lang1"))
    assert _deliver(bot, body) == [200] * 9
    settle(bot)
    assert len(_replies(bot, "lang1")) == 1


def test_a_watch_replayed_after_a_restart_adds_nothing_and_answers_nothing(tmp_path) -> None:
    with serving(tmp_path, CONFIG) as first:
        body = slash_command_body("watch a100x8 2h", user="UREPLAY", channel="CGPU", trigger_id="trig.replay.1",
                                  response_url=first.api.response_url("replay1"))
        assert first.post(body).status_code == 200
        settle(first)
        assert _watches(first, "UREPLAY") == 1
        first.stop()
        again = start_bot(tmp_path, CONFIG, api=first.api, append_log=True)
        try:
            for copy in [body, *_copies(body)]:
                assert again.post(copy, {"X-Slack-Retry-Num": "3", "X-Slack-Retry-Reason": "http_timeout"}
                                  ).status_code == 200
            settle(again)
            assert _watches(again, "UREPLAY") == 1
            assert len(_replies(again, "replay1")) == 1
        finally:
            again.stop()
