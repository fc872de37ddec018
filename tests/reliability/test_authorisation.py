"""Authorisation matrix over signed HTTP (issue #7, part 5), and secrets that never leak anywhere.

Owner, admin and another user try release, extend, cancel, approve and the admin commands. A refusal is an
ephemeral reply and changes nothing in the ledger; an allowed action takes effect.
"""

from __future__ import annotations

import json

import httpx
import pytest
from gpubot.db.tables.billing import BudgetOverrideRow
from gpubot.db.tables.bookings import BookingRow
from gpubot.db.tables.operations import ProviderStateRow
from gpubot.scheduling.agent import issue_agent_token
from sqlmodel import select

from tests.e2e.server_kit import BOT_TOKEN, SECRET, RunningBot, config, free_port, offer, serving, settle, sim
from tests.reliability.figures import record

SECRETS = {"LAMBDA_API_KEY": "lambda-secret-key-4242", "RUNPOD_API_KEY": "runpod-secret-key-4242",
           "AUTODL_TOKEN": "autodl-secret-token-4242", "PAGERDUTY_ROUTING_KEY": "pd-routing-key-4242"}
CONFIG = config(alerts=True, budget={"monthly": 1000000, "over_budget": "approve", "users": {"UPOOR": 1}},
                providers={"sim": sim(offer(count=1000))})
# (action, actor role, allowed): owner = the booking's owner, admin = a team admin, other = anyone else
MATRIX = [(action, role, allowed) for action, allowed_roles in (
    ("release", {"owner", "admin"}), ("extend", {"owner", "admin"}), ("cancel", {"owner", "admin"}),
    ("approve", {"admin"}), ("admin release", {"admin"}), ("admin provider pause", {"admin"}),
    ("admin budget set", {"admin"})) for role in ("owner", "admin", "other") for allowed in [role in allowed_roles]]
_SEEN: list[bool] = []


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> RunningBot:
    env = {**SECRETS, "PAGERDUTY_EVENTS_URL": f"http://127.0.0.1:{free_port()}/v2/enqueue"}
    with serving(tmp_path_factory.mktemp("authz"), CONFIG, extra_env=env) as running:
        yield running


def _snapshot(bot) -> str:
    with bot.db.session() as session:
        rows = [*session.exec(select(BookingRow)).all(), *session.exec(select(ProviderStateRow)).all(),
                *session.exec(select(BudgetOverrideRow)).all()]
        return json.dumps([r.model_dump(mode="json") for r in rows], sort_keys=True)


def _booking(bot, owner: str, text: str, wait_for: str) -> int:
    earlier = _latest(bot, owner)  # the approve cases book for the same owner: wait for this command's booking
    bot.command(text, user=owner)
    assert bot.api.wait_for(lambda _calls: _latest(bot, owner) not in (None, earlier), 15)
    booking_id = _latest(bot, owner)
    assert bot.api.wait_for(lambda calls: any(f"#{booking_id}*" in c.args.get("text", "") and wait_for in
                                              c.args.get("text", "") for c in calls), 15)
    return booking_id


def _latest(bot, owner: str) -> int | None:
    with bot.db.session() as session:
        return max((r.id for r in session.exec(select(BookingRow).where(BookingRow.owner == owner)).all()),
                   default=None)


def _target(bot, action: str, owner: str) -> int | None:
    if action == "cancel":
        return _booking(bot, owner, 'book a100x1 2h --at "tomorrow 09:00"', "Scheduled")
    if action == "approve":
        booking_id = _booking(bot, owner, "book a100x1 2h", "waiting for an admin")
        asked = f"#{booking_id} (1× a100 for 2h) is over budget"  # the admins' ask comes through the outbox
        assert bot.api.wait_for(lambda calls: any(c.args.get("channel") == "UADMIN" and asked in c.args.get("text", "")
                                                  for c in calls), 15)
        return booking_id
    if action.startswith("admin") and action != "admin release":
        return None
    booking_id = _booking(bot, owner, "book a100x1 2h", "active on sim")
    assert bot.api.wait_for(lambda calls: any(f"#{booking_id} is ready" in c.args.get("text", "") for c in calls), 15)
    return booking_id


def _command(action: str, booking_id: int | None) -> str:
    return {"release": f"release {booking_id}", "extend": f"extend {booking_id} 1h", "cancel": f"cancel {booking_id}",
            "admin release": f"admin release {booking_id}", "admin provider pause": "admin provider pause sim",
            "admin budget set": "admin budget set project:authz 1234"}.get(action, "")


@pytest.mark.parametrize(("action", "role", "allowed"), MATRIX)
def test_authorisation_matrix(bot, action, role, allowed):
    owner = "UPOOR" if action == "approve" else f"UOWN{len(_SEEN)}"
    actor = {"owner": owner, "admin": "UADMIN", "other": "UOTHER"}[role]
    booking_id = _target(bot, action, owner)
    settle(bot)
    before, calls = _snapshot(bot), len(bot.api.calls)
    if action == "approve":
        ts = next(ts for ts, m in bot.api.messages["CGPU"].items() if f"#{booking_id}*" in m["text"])
        bot.click("booking_approve", booking_id, actor, ts)
    else:
        bot.command(_command(action, booking_id), user=actor)
    assert bot.api.wait_for(lambda c: len(c) > calls, 10)
    settle(bot)
    replies = [c.args for c in bot.api.calls[calls:] if c.method == "response_url"]
    refused = [r for r in replies if any(w in r.get("text", "") for w in ("belongs to", "Only team admins"))]
    _SEEN.append(allowed)
    if allowed:
        assert not refused and _snapshot(bot) != before
    else:
        assert refused and all(r.get("response_type") == "ephemeral" for r in refused)
        assert _snapshot(bot) == before, "a refused request changed the ledger"
        assert not [c for c in bot.api.calls[calls:] if c.method != "response_url" and booking_id is not None
                    and f"#{booking_id}" in json.dumps(c.args)]
    if allowed and action == "admin provider pause":
        bot.command("admin provider resume sim", user="UADMIN")
        assert bot.api.wait_for(lambda c: any("resumed" in x.args.get("text", "") for x in c), 10)
    if len(_SEEN) == len(MATRIX):
        record("authorisation", f"{len(MATRIX)} cases (7 actions × owner/admin/other): {_SEEN.count(True)} "
                                f"allowed and took effect, {_SEEN.count(False)} refused ephemerally with the ledger "
                                "unchanged")


def test_no_secret_appears_in_logs_messages_errors_or_metrics(bot):
    bot.command("book a100x1 1h", user="USECRET")
    assert bot.api.wait_for(lambda c: any("is ready" in x.args.get("text", "") and x.args.get("channel") ==
                                          "USECRET" for x in c), 15)
    with bot.db.session() as session:  # a token as a launch mints the start command's (a DM gives one later)
        booking_id = session.exec(select(BookingRow.id).where(BookingRow.owner == "USECRET")).first()
        agent_token = issue_agent_token(booking_id, session=session)
    httpx.post(f"{bot.url}/api/telemetry", content=b"{bad json", headers={"Authorization": f"Bearer {agent_token}"})
    bot.command("bok a100x1", user="USECRET")
    settle(bot)
    others = list(bot.api.calls)
    captured = {"log": bot.log_path.read_text(), "metrics": httpx.get(f"{bot.url}/metrics").text,
                "slack": json.dumps([c.args for c in others], ensure_ascii=False, default=str)}
    secrets = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SECRET, "agent token": agent_token, **SECRETS}
    leaks = [(name, where) for name, value in secrets.items() for where, text in captured.items() if value in text]
    record("secrets", f"{len(secrets)} secrets × {len(captured)} captures (log {len(captured['log'])} chars, "
                      f"{len(others)} Slack calls, /metrics): {len(leaks)} leaks")
    assert leaks == []
