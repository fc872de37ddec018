"""Exactly-once effects (issue #7, part 4): retried commands, double clicks, resent telemetry, two digesters."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta

import httpx
import pytest
from gpubot.db import bookings as repo
from gpubot.db.tables.telemetry import TelemetrySampleRow
from gpubot.domain.model import BookingState
from gpubot.scheduling.money.digest import send_digest
from sqlalchemy import func
from sqlmodel import select

from gpubot.sandbox.requests import slash_command_body
from tests.databases import postgres_url
from tests.e2e.server_kit import RunningBot, agent_token, config, offer, serving, settle, sim
from tests.engine_kit import deliver, make_engine, simulated_policy
from tests.reliability.figures import record, size

REPEATS = size(short=3, full=20)
CONFIG = config(
    budget={"monthly": 1000000, "over_budget": "warn"},
    booking={"max_gpus_per_user": 1000},
    health={"telemetry_stale_after": "2s"},  # the DM with the agent's line (and its token) comes 2 s after ready
    providers={"sim": sim(offer(count=1000), telemetry=False)})
_TALLY: dict[str, tuple[int, int]] = {}


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> RunningBot:
    with serving(tmp_path_factory.mktemp("once"), CONFIG) as running:
        yield running
    record("exactly-once", ", ".join(f"{what}: {effects} effect(s) from {tries} deliveries"
                                     for what, (tries, effects) in _TALLY.items()))


def _bookings_of(bot, user: str) -> list:
    with bot.db.session() as session:
        return repo.list_bookings(session=session, owner=user)


def _ready(bot, user: str, timeout: float = 15):
    assert bot.api.wait_for(lambda calls: any(c.args.get("channel") == user and "is ready" in c.args.get("text", "")
                                              for c in calls), timeout)
    return [c for c in bot.api.calls_to("chat.postMessage") if c.args.get("channel") == user][-1]


def test_a_slash_command_retried_by_slack_books_once(bot):
    for i in range(REPEATS):
        user = f"URETRY{i}"
        body = slash_command_body("book a100x1 1h", user=user, channel="CGPU", trigger_id=f"trig.retry{i}",
                                  response_url=bot.api.response_url(f"retry{i}"))
        responses = [bot.post(body)] + [bot.post(body, {"X-Slack-Retry-Num": str(n), "X-Slack-Retry-Reason":
                                                        "http_timeout"}) for n in (1, 2)]
        assert [r.status_code for r in responses] == [200, 200, 200]
        _ready(bot, user)
        settle(bot)
        assert len(_bookings_of(bot, user)) == 1
    _TALLY["retried /gpu book"] = (3 * REPEATS, sum(len(_bookings_of(bot, f"URETRY{i}")) for i in range(REPEATS)))


def test_release_clicked_twice_and_by_two_people_at_once_releases_once(bot):
    released = 0
    for i in range(REPEATS):
        user = f"UCLICK{i}"
        bot.command("book a100x1 2h", user=user)
        _ready(bot, user)
        booking = _bookings_of(bot, user)[0]
        ts = next(ts for ts, m in bot.api.messages["CGPU"].items() if f"#{booking.id}*" in m["text"])
        clickers = [user, user, "UADMIN", "UADMIN"]
        with ThreadPoolExecutor(4) as pool:
            codes = list(pool.map(lambda who, b=booking.id, t=ts: bot.click("booking_release", b, who, t)
                                  .status_code, clickers))
        assert codes == [200] * 4
        bot.api.wait_for(lambda calls, b=booking: any(f"#{b.id} released" in c.args.get("text", "") for c in calls))
        settle(bot)
        dms = [c for c in bot.api.calls_to("chat.postMessage") if f"#{booking.id} released" in c.args.get("text", "")]
        assert len(dms) == 1 and _bookings_of(bot, user)[0].state == BookingState.RELEASED
        released += len(dms)
    _TALLY["Release clicked 4× at once (owner twice, admin twice)"] = (4 * REPEATS, released)


def test_a_resent_telemetry_batch_counts_once(bot):
    bot.command("book a100x2 1h", user="UTELE")
    _ready(bot, "UTELE")
    token = agent_token(bot, "UTELE")
    booking = _bookings_of(bot, "UTELE")[0]
    batch = {"batch_id": "b-1", "gpus": [{"index": 0, "util": 50, "temp_c": 60}, {"index": 1, "util": 40,
                                                                                   "temp_c": 61}]}
    headers = {"Authorization": f"Bearer {token}"}
    with ThreadPoolExecutor(4) as pool:
        codes = list(pool.map(lambda _i: httpx.post(f"{bot.url}/api/telemetry", json=batch, headers=headers,
                                                    timeout=10).status_code, range(2 + REPEATS)))
    assert codes == [204] * (2 + REPEATS)
    with bot.db.session() as session:
        stored = session.exec(select(func.count()).select_from(TelemetrySampleRow)
                              .where(TelemetrySampleRow.booking_id == booking.id)).one()
    assert stored == 2
    _TALLY["telemetry batch resent"] = (2 + REPEATS, stored // 2)


@pytest.mark.postgres
def test_the_digest_run_by_two_replicas_at_once_is_posted_once(tmp_path, clock):
    url = next(pg := postgres_url())
    try:
        policy = simulated_policy(team={"digest_channel": "CDIGEST"})
        engines = [make_engine(url, policy, clock) for _ in range(2)]
        days = [date(2026, 10, 1) + timedelta(days=d) for d in range(REPEATS)]
        gate = threading.Barrier(2)

        def run(engine) -> int:
            gate.wait()
            return sum(send_digest(engine, day) for day in days)

        with ThreadPoolExecutor(2) as pool:
            sent = sum(pool.map(run, engines))
            list(pool.map(deliver, engines))  # both replicas' delivery workers at once
        posts = [p for engine in engines for p in engine.notifier.posts]
        assert sent == len(posts) == len(days)
        _TALLY["digest by two replicas"] = (2 * len(days), len(posts))
        for engine in engines:
            engine.db.dispose()
    finally:
        pg.close()


def _deliveries(bot: RunningBot, body: bytes) -> list[int]:
    """`body` as Slack and an attacker could deliver it: once, twice more as Slack's retries, three times re-signed
    (a fresh timestamp each), then four copies racing each other."""
    codes = [bot.post(body).status_code]
    codes += [bot.post(body, {"X-Slack-Retry-Num": str(n), "X-Slack-Retry-Reason": "http_timeout"}).status_code
              for n in (1, 2)]
    codes += [bot.post(body).status_code for _ in range(3)]
    with ThreadPoolExecutor(4) as pool:
        codes += list(pool.map(lambda _n: bot.post(body).status_code, range(4)))
    return codes


@pytest.mark.parametrize("text", ["watch h100x8 2h", "lang zh", "extend {label} 1h"])
def test_a_command_retried_resigned_or_replayed_acts_and_answers_once(bot, text: str) -> None:
    from gpubot.db import watches as watch_repo

    user = f"UDUP{abs(hash(text)) % 10**6}"
    if "{label}" in text:
        bot.command("book a100x1 1h", user=user)
        _ready(bot, user)
        text = text.format(label=f"#{_bookings_of(bot, user)[0].id}")
        ends_before = _bookings_of(bot, user)[0].ends_at
    key = f"dup{abs(hash(text)) % 10**6}"
    body = slash_command_body(text, user=user, channel="CGPU", trigger_id=f"trig.{key}",
                              response_url=bot.api.response_url(key))
    assert _deliveries(bot, body) == [200] * 10
    settle(bot)
    replies = [c for c in bot.api.calls if c.method == "response_url" and c.args.get("_key") == key]
    assert len(replies) == 1, [r.args.get("text") for r in replies]
    if text.startswith("watch"):
        with bot.db.session() as session:
            assert len(watch_repo.list_watches(session=session, owner=user)) == 1
    if text.startswith("extend"):
        assert _bookings_of(bot, user)[0].ends_at - ends_before == timedelta(hours=1)
    _TALLY[f"/gpu {text.split()[0]} delivered 10×"] = (10, len(replies))
