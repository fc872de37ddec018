"""Twenty `/gpu book` at once over signed HTTP against one budget (issue #17): on one replica (SQLite) and on two
replicas sharing PostgreSQL, what is committed never passes the budget, and every refused request is told why."""

from __future__ import annotations

import threading
import tomllib
from decimal import Decimal

import pytest
from gpubot.providers.registry import policy_from_dict
from gpubot.scheduling.engine import Engine
from gpubot.scheduling.money.reports import budget_statuses

from gpubot.sandbox.requests import slash_command_body
from gpubot.sandbox.slack_api import FakeSlackApi
from tests.databases import postgres_url
from tests.e2e.server_kit import RunningBot, config, offer, settle, sim, start_bot

CONFIG = config(budget={"monthly": 50, "over_budget": "block"},
                providers={"sim": sim(offer(count=64))})
REQUESTS = 20
BUDGET, EACH = Decimal(50), Decimal(16)  # a100x1 8h at $2: three fit


def _committed(bot: RunningBot) -> Decimal:
    """The team's commitment as `/gpu budget` computes it, read from the bot's own ledger."""
    engine = Engine(db=bot.db, policy=policy_from_dict(tomllib.loads(CONFIG)), providers={})
    return next(s.projected for s in budget_statuses(engine) if s.scope == "team")


def _race(bots: list[RunningBot], api: FakeSlackApi) -> tuple[int, list[str]]:
    """Send the requests at once (spread over the replicas); the number booked and the refusals' texts."""
    gate = threading.Barrier(REQUESTS)

    def send(i: int) -> None:
        gate.wait()
        body = slash_command_body("book a100x1 8h", user=f"URACE{i:02d}", channel="CGPU",
                                  response_url=api.response_url(f"race{i}"))
        assert bots[i % len(bots)].post(body).status_code == 200

    threads = [threading.Thread(target=send, args=(i,)) for i in range(REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    def answered(calls) -> int:
        refused = {c.args.get("_key") for c in calls if c.method == "response_url"
                   and str(c.args.get("_key", "")).startswith("race")}
        booked = {c.args.get("channel") for c in calls if c.method == "chat.postMessage" and "is ready" in
                  c.args.get("text", "")}
        return len(refused) + len(booked)

    if not api.wait_for(lambda calls: answered(calls) >= REQUESTS, 60):
        told = "\n".join(c.args.get("text", "")[:160] for c in api.calls_to("chat.postMessage"))
        pytest.fail(f"{answered(list(api.calls))} of {REQUESTS} requests answered; the bot posted:\n{told}")
    for bot in bots:  # on two replicas each has its own inbox on the shared ledger
        settle(bot)
    refusals = [c.args["text"] for c in api.calls_to("response_url") if str(c.args.get("_key")).startswith("race")]
    booked = len([c for c in api.calls_to("chat.postMessage") if "is ready" in c.args.get("text", "")])
    return booked, refusals


def _check(bots: list[RunningBot], api: FakeSlackApi, label: str) -> None:
    booked, refusals = _race(bots, api)
    committed = _committed(bots[0])
    print(f"\n{label}: {REQUESTS} concurrent /gpu book, {booked} booked, {len(refusals)} refused; "
          f"committed ${committed:.2f} of ${BUDGET}")
    assert booked == BUDGET // EACH and committed <= BUDGET
    assert len(refusals) == REQUESTS - booked
    assert all("Over budget, so this booking" in text and "team would reach" in text for text in refusals)


def test_one_replica_never_books_past_the_budget(tmp_path):
    api = FakeSlackApi()
    bot = start_bot(tmp_path, CONFIG, api)
    try:
        _check([bot], api, "one replica (SQLite)")
    finally:
        bot.stop()
        api.stop()


@pytest.mark.postgres
def test_two_replicas_on_postgres_never_book_past_the_budget(tmp_path):
    url = next(schema := postgres_url())
    api = FakeSlackApi()
    api.start()
    bots = []
    try:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            bots.append(start_bot(tmp_path / name, CONFIG, api, {"DATABASE_URL": url}))
        _check(bots, api, "two replicas (PostgreSQL)")
    finally:
        for bot in bots:
            bot.stop()
        api.stop()
        schema.close()
