"""The running app over Slack's wire protocol: signed requests in, Web API calls out."""

from __future__ import annotations

import json
import re
import sqlite3
import time

import httpx
from gpubot.scheduling.metrics import METRIC_NAMES

from gpubot.sandbox.requests import action_body, sign, slash_command_body
from tests.e2e.server_kit import BOT_TOKEN, SECRET, book, inbox_rows, settle, until


def _texts(bot, method: str) -> list[str]:
    return [c.args.get("text", "") for c in bot.api.calls_to(method)]


def _wait_text(bot, method: str, needle: str, timeout: float = 10) -> dict:
    found: list = []

    def seen(calls):
        found[:] = [c for c in calls if c.method == method and needle in json.dumps(c.args, ensure_ascii=False)]
        return bool(found)

    assert bot.api.wait_for(seen, timeout), f"no {method} containing {needle!r}; got {_texts(bot, method)}"
    return found[-1].args


def test_health_and_metrics(bot):
    assert httpx.get(f"{bot.url}/healthz").json() == {"started": True, "database": True, "migrations": True,
                                                       "scheduler": True, "providers": True, "slack": True,
                                                       "disk": True, "providers_down": {}}
    metrics = httpx.get(f"{bot.url}/metrics").text
    assert "gpubot_queue_depth" in metrics and "gpubot_slack_ack_seconds" in metrics


def test_help_is_answered_ephemerally(bot):
    response = bot.command("help")
    assert response.status_code == 200
    reply = _wait_text(bot, "response_url", "/gpu book a100x4 6h")
    assert reply["response_type"] == "ephemeral"


def test_booking_goes_from_quote_to_ready_in_one_message(bot):
    label = book(bot, "UALICE", "a100x4 6h")
    posted = _wait_text(bot, "chat.postMessage", f"*{label}*")
    assert "$58.08" in posted["text"], posted["text"]  # 4 GPUs x 6 h x $2.42
    # $58.08 is 1.16 % of $5,000 on top of whatever the module's other tests hold already
    after, before = map(int, re.search(r"team at (\d+) % of \$5,000\.00 after this \(was (\d+) %\)",
                                       posted["text"]).groups())
    assert before + 1 <= after <= before + 2, posted["text"]
    updated = _wait_text(bot, "chat.update", f"*{label}* 4× A100 40GB for 6h — active on sim")
    assert updated["channel"] == "CGPU"
    ready = _wait_text(bot, "chat.postMessage", f"{label} is ready")
    assert ready["channel"] == "UALICE" and "ssh " in ready["text"]
    for call in bot.api.calls:
        assert call.headers.get("Authorization") in (f"Bearer {BOT_TOKEN}", None)


def test_a_command_is_acked_while_the_ledger_is_write_locked_and_answered_once_it_is_free(bot):
    """The ack only verifies and records (in the inbox's own SQLite file): it never waits for the ledger's write
    lock, which booking work may hold; the command's own work runs once the lock is free."""
    ledger = sqlite3.connect(bot.env["DATABASE_URL"].removeprefix("sqlite:///"), isolation_level=None)
    ledger.execute("BEGIN IMMEDIATE")  # a long booking transaction holding SQLite's one write lock
    try:
        started = time.perf_counter()
        response = bot.command("help", user="ULOCKED")
        acked_in = time.perf_counter() - started
    finally:
        ledger.execute("ROLLBACK")
        ledger.close()
    assert response.status_code == 200 and response.text == ""
    assert acked_in < 2.0, f"the ack waited {acked_in:.1f} s for the ledger"  # its busy timeout is 10 s
    _wait_text(bot, "response_url", "/gpu book a100x4 6h")


def test_a_typo_gets_a_suggestion_and_books_nothing(bot):
    settle(bot)  # what earlier tests owe is delivered first
    before = len(bot.api.calls_to("chat.postMessage"))
    bot.command("book a10o x4 6h", user="UBOB")
    reply = _wait_text(bot, "response_url", "a10o")
    assert "did you mean `a100`" in reply["text"] and reply["response_type"] == "ephemeral"
    settle(bot)
    assert len(bot.api.calls_to("chat.postMessage")) == before
    bot.command("status", user="UBOB")
    assert "no bookings" in _wait_text(bot, "response_url", "no bookings")["text"]


def test_bad_signatures_are_refused_and_do_nothing(bot):
    settle(bot)
    calls_before, recorded_before = len(bot.api.calls), inbox_rows(bot)
    body = slash_command_body("book a100x1 1h", user="UEVE", channel="CGPU", response_url=bot.api.response_url("x"))
    wrong = bot.post(body, headers=sign("not-the-secret", body))
    stale = bot.post(body, headers=sign(SECRET, body, timestamp=int(time.time()) - 6 * 60))
    unsigned = bot.post(body, signed=False)
    tampered = bot.post(body + b"&x=1", headers=sign(SECRET, body))
    assert [r.status_code for r in (wrong, stale, unsigned, tampered)] == [401, 401, 401, 401]
    assert inbox_rows(bot) == recorded_before  # refused before the inbox: no work was ever started
    settle(bot)
    assert len(bot.api.calls) == calls_before


def test_release_button_acts_once_and_only_for_the_owner(bot):
    label = book(bot, "UCAROL", "h100x1 2h")
    booking_id = int(label[1:])
    _wait_text(bot, "chat.update", f"*{label}* 1× H100 80GB for 2h — active on sim")
    message_ts = next(ts for ts, m in bot.api.messages["CGPU"].items() if f"#{booking_id}*" in m["text"])
    bot.click("booking_release", booking_id, user="UMALLORY", message_ts=message_ts)
    refusal = _wait_text(bot, "response_url", f"#{booking_id} belongs to")
    assert refusal["response_type"] == "ephemeral" and f"#{booking_id} belongs to <@UCAROL>;" in refusal["text"]
    bot.click("booking_release", booking_id, user="UCAROL", message_ts=message_ts)
    bot.click("booking_release", booking_id, user="UCAROL", message_ts=message_ts)
    _wait_text(bot, "chat.postMessage", f"#{booking_id} released")
    settle(bot)
    released_dms = [t for t in _texts(bot, "chat.postMessage") if f"#{booking_id} released" in t]
    assert len(released_dms) == 1


def test_app_home_is_published(bot):
    assert bot.event({"type": "app_home_opened", "user": "UALICE", "tab": "home"}).status_code == 200
    published = _wait_text(bot, "views.publish", "UALICE")
    assert "Your GPU bookings" in json.dumps(published["view"])


def test_book_without_arguments_opens_the_modal_and_submitting_books(bot):
    bot.command("book", user="UDAVE", trigger_id="trig.modal1")
    opened = _wait_text(bot, "views.open", "trig.modal1")  # its own form: another test opens one too
    assert opened["trigger_id"] == "trig.modal1"
    view = opened["view"]
    values = {"gpu": {"gpu_pick": {"type": "static_select", "selected_option": {"value": "h100"}}},
              "count": {"count_pick": {"type": "static_select", "selected_option": {"value": "2"}}},
              "duration": {"duration_text": {"type": "plain_text_input", "value": "3h"}},
              "project": {"project_text": {"type": "plain_text_input", "value": "llm"}}}
    submitted = {**view, "id": "V1", "state": {"values": values}}
    assert bot.submit_view(submitted, user="UDAVE").status_code == 200
    _wait_text(bot, "chat.postMessage", "2× H100")


def test_every_documented_metric_is_exported(bot):
    label = book(bot, "UIVAN", "h100x1 1h")  # the module's tests hold at most 8 A100s: their stock
    _wait_text(bot, "chat.update", f"*{label}* 1× H100 80GB for 1h — active on sim")
    text = httpx.get(f"{bot.url}/metrics").text
    declared = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")}
    missing = {n for n in METRIC_NAMES if n not in declared and n.removesuffix("_total") not in declared}
    assert not missing
    assert re.search(r'^gpubot_acquisition_attempts_total\{outcome="launched",provider="sim"\} [1-9]', text, re.M)
    assert re.search(r"^gpubot_bookings_active \d", text, re.M)


def test_idle_buttons_are_for_the_owner_only(bot):
    booking_id = int(book(bot, "UERIN", "a100x1 1h")[1:])
    _wait_text(bot, "chat.postMessage", f"#{booking_id} is ready")
    bot.click("idle_snooze", booking_id, user="UMALLORY", message_ts="1.1", channel="UERIN")
    # Its own refusal: another test's may be the newest answer there until this one arrives
    assert f"#{booking_id} belongs to <@UERIN>" in _wait_text(bot, "response_url", f"#{booking_id} belongs to")["text"]
    bot.click("idle_snooze", booking_id, user="UERIN", message_ts="1.1", channel="UERIN")
    assert "snoozed until" in _wait_text(bot, "chat.postMessage", "snoozed until")["text"]
    bot.click("idle_keep", booking_id, user="UERIN", message_ts="1.2", channel="UERIN")
    _wait_text(bot, "chat.postMessage", f"#{booking_id} kept")


def test_a_keep_click_delivered_twice_or_clicked_again_confirms_once(bot):
    booking_id = int(book(bot, "UHEIDI", "a100x2 1h")[1:])
    _wait_text(bot, "chat.postMessage", f"#{booking_id} is ready")
    body = action_body("idle_keep", str(booking_id), user="UHEIDI", channel="UHEIDI", message_ts="2.1",
                       response_url=bot.api.response_url("keep"))
    assert bot.post(body).status_code == 200
    assert bot.post(body, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
                    ).status_code == 200
    bot.click("idle_keep", booking_id, user="UHEIDI", message_ts="2.2", channel="UHEIDI")  # another reminder's
    _wait_text(bot, "chat.postMessage", f"#{booking_id} kept")
    settle(bot)
    kept = [t for t in _texts(bot, "chat.postMessage") if t.startswith(f"#{booking_id} kept")]
    assert kept == [f"#{booking_id} kept: no more idle reminders for this idle stretch."]


def test_the_same_command_delivered_twice_books_once(bot):
    def h100_bookings() -> int:
        return sum("2× H100" in t for t in _texts(bot, "chat.postMessage") if "*#" in t)

    before = h100_bookings()
    body = slash_command_body("book h100x2 1h", user="UFRANK", channel="CGPU", trigger_id="trig.same",
                              response_url=bot.api.response_url("dup"))
    first = bot.post(body)
    retry = bot.post(body, headers={"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
    assert first.status_code == retry.status_code == 200
    assert bot.api.wait_for(lambda _calls: h100_bookings() > before, 10)
    settle(bot)
    assert h100_bookings() == before + 1


def test_bad_references_are_refused_ephemerally(bot):
    bot.command("release 9999", user="UGRACE")
    assert "There is no booking #9999" in _wait_text(bot, "response_url", "#9999")["text"]
    someone_elses = book(bot, "UHANK", "h100x1 1h")
    bot.command(f"extend {someone_elses} 2h", user="UGRACE")
    assert "belongs to" in _wait_text(bot, "response_url", f"{someone_elses} belongs to")["text"]
    bot.command("admin provider pause sim", user="UGRACE")
    assert "Only team admins" in _wait_text(bot, "response_url", "Only team admins")["text"]
    bot.command("book a100x4 6h --note " + "x" * 4000, user="UGRACE")
    assert "the limit is 2000" in _wait_text(bot, "response_url", "the limit is 2000")["text"]
    bot.command("bok a100x4", user="UGRACE")
    assert "`book`" in _wait_text(bot, "response_url", "bok")["text"]


def test_app_home_opened_without_a_user_is_a_logged_200(bot):
    before = len(bot.api.calls_to("views.publish"))
    assert bot.event({"type": "app_home_opened", "tab": "home"}).status_code == 200
    # Bolt runs an event's listener after its ack, and an event has no inbox ticket for settle to wait on: the
    # listener's own log line is the signal that it has returned
    def logged() -> str:
        text = bot.log_path.read_text()
        return text if "app_home_opened without a user id" in text else ""
    log = until(logged)
    assert "KeyError" not in log
    settle(bot)
    assert len(bot.api.calls_to("views.publish")) == before


def test_an_extend_button_with_a_bare_id_is_refused_with_a_message(bot):
    from gpubot.db import bookings as booking_repo

    label = book(bot, "UBARE", "h100x1 1h")  # the module's other tests hold the 8 A100s of its stock
    booking_id = int(label[1:])
    deadline = time.monotonic() + 15
    while True:  # running, so it has an end to extend
        with bot.db.session() as session:
            ends = booking_repo.get_booking(booking_id, session=session).ends_at
        if ends is not None:
            break
        assert time.monotonic() < deadline, f"{label} never started"
        time.sleep(0.05)
    for _ in range(2):
        assert bot.click("booking_extend", booking_id, user="UBARE", message_ts="1.1").status_code == 200
    settle(bot)
    refused = [c for c in bot.api.calls if c.method == "response_url" and "from an older message" in
               c.args.get("text", "") and f"/gpu extend {label} 1h" in c.args.get("text", "")]
    assert len(refused) == 2
    with bot.db.session() as session:
        assert booking_repo.get_booking(booking_id, session=session).ends_at == ends


def test_modal_fields_are_typed_never_read_as_command_text(bot):
    """A project `p --provider elsewhere --note x` or a length `1h --spot` sets no option: the submission is
    refused on that field, and nothing is booked."""
    from tests.e2e.server_kit import owned_booking_ids

    bot.command("book", user="UMODAL", trigger_id="trig.modal.typed")
    view = _wait_text(bot, "views.open", "trig.modal.typed")["view"]

    def submit(duration: str, project: str) -> httpx.Response:
        values = {"gpu": {"gpu_pick": {"type": "static_select", "selected_option": {"value": "a100"}}},
                  "count": {"count_pick": {"type": "static_select", "selected_option": {"value": "1"}}},
                  "duration": {"duration_text": {"type": "plain_text_input", "value": duration}},
                  "project": {"project_text": {"type": "plain_text_input", "value": project}}}
        return bot.submit_view({**view, "id": "VTYPED", "state": {"values": values}}, user="UMODAL")

    injected = submit("2h", "p --provider elsewhere --note x")
    assert injected.json() == {"response_action": "errors", "errors": {
        "project": "A project is one word of letters, digits and . _ - : / (at most 64)."}}
    assert submit("1h --spot", "llm").json()["errors"] == {"duration": "Enter one length, such as 4h, 90m or 1d."}
    settle(bot)
    assert not owned_booking_ids(bot, "UMODAL")
    assert submit("2h", "llm-7").status_code == 200
    _wait_text(bot, "chat.postMessage", "llm-7")
