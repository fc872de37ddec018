"""Fuzzing the running app over HTTP (issue #7, part 3; issue #20): random bodies, headers, sizes and bytes, and
interactivity payloads shaped like Slack's (real action ids and callback, random values and parts).

Unsigned or badly signed requests get 4xx and never reach a listener (no Web API call, no row written);
signed `/gpu` text and interaction payloads get 2xx or 4xx and never crash a listener; telemetry bodies with
any token get 4xx. Nothing answers 5xx and the log shows no exception.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import httpx
import pytest
from gpubot.db.tables.bookings import BookingRow
from gpubot.db.tables.delivery import EffectRow
from gpubot.db.tables.telemetry import TelemetrySampleRow
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func
from sqlmodel import select

from gpubot.sandbox.requests import sign, slash_command_body
from tests.e2e.server_kit import SECRET, RunningBot, agent_token, config, inbox_rows, serving, settle, sim
from tests.reliability.figures import record, size

EXAMPLES = size(short=40, full=400)
SHAPED_EXAMPLES = size(short=60, full=1000)
CONFIG = config(
    health={"telemetry_stale_after": "2s"},  # the DM with the agent's line (and its token) comes 2 s after ready
    providers={"sim": sim(telemetry=False)})
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
CONTENT_TYPES = st.sampled_from(["application/x-www-form-urlencoded", "application/json", "text/plain",
                                 "multipart/form-data; boundary=x", ""])
BODIES = st.one_of(st.binary(max_size=4096), st.text(max_size=2048).map(str.encode),
                   st.dictionaries(st.text(max_size=20), st.text(max_size=200)).map(lambda d: urlencode(d).encode()),
                   st.sampled_from([b"\xff\xfe\xfd" * 1000, b"payload=%7B%22type%22%3A1%7D", b"a" * 1_048_576,
                                    b"a" * 1_048_577, b"\x00" * 70000]))
HEADERS = st.dictionaries(st.sampled_from(["X-Slack-Signature", "X-Slack-Request-Timestamp", "X-Slack-Retry-Num",
                                           "X-Forwarded-For", "Content-Encoding"]),
                          st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=80),
                          max_size=4)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                max_size=5), max_leaves=20)
TOKENS = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40)
_STATUS: dict[str, list[int]] = {}


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> RunningBot:
    with serving(tmp_path_factory.mktemp("fuzz"), CONFIG) as running:
        yield running
    for kind, codes in _STATUS.items():
        spread = ", ".join(f"{code or 'closed'}×{codes.count(code)}" for code in sorted(set(codes)))
        record("fuzz", f"{kind}: {len(codes)} requests → {spread}")


def _rows(bot) -> tuple[int, int, int]:
    with bot.db.session() as session:
        return tuple(session.exec(select(func.count()).select_from(t)).one()
                     for t in (BookingRow, EffectRow, TelemetrySampleRow))


_CLIENT = httpx.Client(timeout=30, trust_env=False)  # one client: a new one per request costs an SSL context


BODY_LIMIT = 1_048_576
# An oversized body is answered 413 and its connection closed at once, unread (issue #20): a client still sending
# it may meet the closed socket before it reads the 413. That outcome is recorded as CLOSED, never as a success.
CLOSED = 0


def _post(bot, kind: str, path: str, body: bytes, headers: dict) -> int:
    try:
        code = _CLIENT.post(f"{bot.url}{path}", content=body, headers=headers).status_code
    except (httpx.WriteError, httpx.ReadError, httpx.RemoteProtocolError):
        if len(body) <= BODY_LIMIT:
            raise
        code = CLOSED
    _STATUS.setdefault(kind, []).append(code)
    return code


def _no_crash_in_log(bot) -> None:
    log = bot.log_path.read_text(errors="replace")
    assert "Traceback" not in log and "listener failed" not in log and "work after ack failed" not in log


def _reached(bot: RunningBot) -> tuple[int, int, int]:
    """What a request that got past the signature check leaves: a row in the inbox (every signed request is recorded
    before its ack), an answer to a response_url, a booking. Not every Slack call nor every effect row: the module's
    earlier bookings go on telling their owners things (the no-telemetry DM 2 s after ready) while this test runs."""
    return inbox_rows(bot), len(bot.api.calls_to("response_url")), _rows(bot)[0]


def test_unsigned_or_badly_signed_requests_never_reach_a_listener(bot):
    before = _reached(bot)

    @FUZZ
    @given(body=BODIES, headers=HEADERS, ctype=CONTENT_TYPES, forged=st.booleans())
    def fuzz(body, headers, ctype, forged):
        if forged:  # a valid-looking signature made with the wrong secret
            headers = {**headers, **sign("not-the-signing-secret", body)}
        code = _post(bot, "unsigned or badly signed /slack/events", "/slack/events", body,
                     {**headers, "Content-Type": ctype})
        assert code in (401, 413) or (code == CLOSED and len(body) > BODY_LIMIT)

    fuzz()
    assert _reached(bot) == before
    _no_crash_in_log(bot)


def test_signed_gpu_text_gets_an_answer_never_a_crash(bot):
    @FUZZ
    @given(text=st.text(max_size=300) | st.sampled_from(["book a100x1 1h", "status", "release 99", "cost week",
                                                          "admin budget set team 1", "quote a100x9999 1h"]))
    def fuzz(text):
        body = slash_command_body(text, user="UFUZZ", channel="CGPU", response_url=bot.api.response_url("fz"))
        assert _post(bot, "signed /gpu <random text>", "/slack/events", body,
                     {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)}) == 200

    fuzz()
    settle(bot, 120)  # every command done (their work starts once their acks pause: gpubot/lull.py), replies sent
    replies = [c.args.get("text", "") for c in bot.api.calls_to("response_url")]
    assert replies and not [r for r in replies if "Something went wrong" in r]
    _no_crash_in_log(bot)


def test_signed_interaction_payloads_of_any_shape_get_2xx_or_4xx(bot):
    @FUZZ
    @given(payload=JSON | st.fixed_dictionaries({"type": st.sampled_from(["block_actions", "view_submission",
                                                                          "shortcut"]), "user": JSON,
                                                 "actions": JSON, "view": JSON}))
    def fuzz(payload):
        body = urlencode({"payload": json.dumps(payload)}).encode()
        code = _post(bot, "signed interaction payloads", "/slack/events", body,
                     {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)})
        assert 200 <= code < 500

    fuzz()
    settle(bot, 60)
    assert not [c for c in bot.api.calls_to("response_url") if "Something went wrong" in c.args.get("text", "")]


def test_telemetry_bodies_of_any_shape_are_refused_without_a_crash(bot):
    rows = _rows(bot)

    @FUZZ
    @given(body=BODIES | JSON.map(lambda j: json.dumps(j).encode()), token=TOKENS)
    def fuzz(body, token):
        code = _post(bot, "/api/telemetry with random bodies and tokens", "/api/telemetry", body,
                     {"Authorization": f"Bearer {token}"})
        assert code in (400, 401, 413, 422) or (code == CLOSED and len(body) > BODY_LIMIT)

    fuzz()
    assert _rows(bot) == rows
    _no_crash_in_log(bot)


# -- issue #20: the attacks, kept, and a fuzzer over payloads shaped like Slack's --------------------------------
ACTION_IDS = ["booking_release", "booking_cancel", "booking_approve", "booking_deny", "idle_keep", "idle_snooze",
              "booking_replace", "booking_extend", "watch_book", "gpu_pick", "count_pick", "no_such_action"]
VALUES = st.one_of(st.sampled_from(["abc", "9" * 30, "1", "1@active.0", "-1", "", "1@", "@", "0x10", "1e9"]),
                   st.from_regex(r"[0-9]{1,40}(@[a-z_.0-9]{0,20})?", fullmatch=True), st.text(max_size=60))
ELEMENT = st.fixed_dictionaries({}, optional={"value": st.text(max_size=20),
                                              "selected_option": st.fixed_dictionaries(
                                                  {"value": st.sampled_from(["1", "8", "abc", "9" * 30, "a100"])})})
STATE = st.fixed_dictionaries({"values": st.dictionaries(
    st.sampled_from(["gpu", "count", "duration", "project", "x"]),
    st.dictionaries(st.sampled_from(["gpu_pick", "count_pick", "duration_text", "project_text", "y"]), ELEMENT,
                    max_size=2), max_size=5)})
# Mostly what Slack would send (so listeners run), sometimes a part missing or malformed (so the edge refuses).
VIEW = st.fixed_dictionaries({"id": st.sampled_from(["V1", "V2", "V3", ""]), "type": st.just("modal"),
                              "callback_id": st.just("gpu_book_modal"), "state": STATE},
                             optional={"hash": st.text(max_size=10)}) \
    | st.fixed_dictionaries({"id": st.just("V1"), "callback_id": st.just("gpu_book_modal")},
                            optional={"state": JSON, "type": st.sampled_from(["modal", "workflow_step", ""])})
USER = st.sampled_from([{"id": "UFUZZ"}, {"id": "UADMIN"}, {"id": "UOTHER"}, {"id": "UFUZZ", "name": "f"},
                        {"id": "UADMIN", "team_id": "T0FAKE"}, {"id": "UFUZZ"}, {"id": ""}, {"id": "U" * 100}, {},
                        "UFUZZ"])
SHAPED = st.one_of(
    st.fixed_dictionaries({"type": st.just("block_actions"), "user": USER,
                           "actions": st.lists(st.fixed_dictionaries({"action_id": st.sampled_from(ACTION_IDS),
                                                                      "value": VALUES}), min_size=1, max_size=2)},
                          optional={"view": VIEW, "container": st.fixed_dictionaries(
                              {"message_ts": st.sampled_from(["1.1", "", "x"])}), "trigger_id": st.just("t.1")}),
    st.fixed_dictionaries({"type": st.sampled_from(["view_submission", "view_closed"]), "user": USER},
                          optional={"view": VIEW}))


def _interact(bot, payload: dict, kind: str) -> int:
    payload = {**payload, "response_url": bot.api.response_url("fz-shaped")} if isinstance(payload, dict) else payload
    body = urlencode({"payload": json.dumps(payload)}).encode()
    return _post(bot, kind, "/slack/events", body,
                 {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)})


def test_a_view_submission_without_state_is_a_400(bot):
    payload = {"type": "view_submission", "user": {"id": "UFUZZ"},
               "view": {"id": "V1", "callback_id": "gpu_book_modal"}}
    assert _interact(bot, payload, "issue #20 attacks") == 400


@pytest.mark.parametrize("value", ["abc", "9" * 30])
def test_a_button_value_that_is_no_booking_gets_a_clear_ephemeral_reply(bot, value):
    before = len(bot.api.calls_to("response_url"))
    payload = {"type": "block_actions", "user": {"id": "UFUZZ"}, "container": {"message_ts": "1.1"},
               "actions": [{"action_id": "booking_release", "value": value}]}
    assert _interact(bot, payload, "issue #20 attacks") == 200
    assert bot.api.wait_for(lambda _c: len(bot.api.calls_to("response_url")) > before, 10)
    reply = bot.api.calls_to("response_url")[before].args
    assert "not one gpubot can act on" in reply["text"] and reply["response_type"] == "ephemeral"
    _no_crash_in_log(bot)


@pytest.mark.timeout(1800)  # 1,000 cases under GPUBOT_RELIABILITY=full
def test_signed_interactivity_shaped_like_slacks_never_gets_a_5xx(bot):
    @settings(max_examples=SHAPED_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(payload=SHAPED)
    def fuzz(payload):
        assert _interact(bot, payload, "signed interactivity shaped like Slack's") < 500

    fuzz()
    settle(bot, 120)
    assert not [c for c in bot.api.calls_to("response_url") if "Something went wrong" in c.args.get("text", "")]
    _no_crash_in_log(bot)
    codes = _STATUS["signed interactivity shaped like Slack's"]
    record("fuzz", f"interactivity shaped like Slack's: {len(codes)} cases, {sum(c >= 500 for c in codes)} 5xx")


def _agent_token(bot) -> str:
    bot.command("book a100x1 1h", user="UTOKEN")
    return agent_token(bot, "UTOKEN")


def test_telemetry_with_a_valid_token_refuses_deep_nesting_and_gpus_the_booking_does_not_rent(bot):
    token = _agent_token(bot)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    deep = b'{"gpus": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    reading = {"util": 5, "temp_c": 50}
    beyond = json.dumps({"gpus": [{"index": i, **reading} for i in range(64)]}).encode()
    assert _post(bot, "issue #20 attacks", "/api/telemetry", deep, headers) == 400
    assert _post(bot, "issue #20 attacks", "/api/telemetry", beyond, headers) == 422
    assert _post(bot, "issue #20 attacks", "/api/telemetry", json.dumps({"gpus": [{"index": 0, **reading}]}).encode(),
                 headers) == 204
    _no_crash_in_log(bot)
