"""The Slack channel of the outbox on a real ledger (SQLite and PostgreSQL) and the fake Slack Web API: a notice
for several readers is one row per reader, so a reader Slack failed once is sent to again alone, and every reader
gets it exactly once; a digest and its chart are two rows, each retried alone."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal

import pytest
from gpubot.bot.app import outbox_client
from gpubot.bot.notifier import SlackNotifier
from gpubot.db import outbox
from gpubot.domain.notices import DigestReady
from gpubot.scheduling.alerts import raise_alert, resolve_alert
from gpubot.scheduling.delivery import LEASE, deliver_due, tell
from gpubot.scheduling.money.digest import chart_of
from slack_sdk import WebClient

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.engine_kit import make_engine, simulated_policy

ON_CALL = ["CALERTS", "UON1", "UON2"]
ADMINS = ["UADMIN", "UADMIN2"]


@pytest.fixture
def api() -> Iterator[FakeSlackApi]:
    fake = FakeSlackApi()
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def engine(database_url, clock):
    policy = simulated_policy(team={"oncall": ON_CALL[1:], "admins": ADMINS})
    return make_engine(database_url, policy, clock)


@pytest.fixture
def slack(engine, api) -> dict[str, SlackNotifier]:
    client = WebClient(token="xoxb-test", base_url=f"{api.base}/api/")
    return {"slack": SlackNotifier(client, engine.policy, sender=outbox_client(client))}


def _deliver_until_done(engine, slack, clock, turns: int = 10) -> None:
    """The delivery worker's turns until nothing is owed, the clock moved past each backoff."""
    for _ in range(turns):
        while deliver_due(engine, slack):
            pass
        with engine.db.session() as session:
            if outbox.counts(session=session)["pending"] == 0:
                return
        clock.advance(seconds=10)
    raise AssertionError("notices still owed")


def _posted(api: FakeSlackApi, channel: str, words: str) -> list[str]:
    """The texts Slack accepted in `channel` that contain `words`, in order."""
    return [c.args["text"] for c in api.calls_to("chat.postMessage")
            if c.args.get("channel") == channel and words in c.args.get("text", "") and c.result.get("ok")]


def test_an_on_call_dm_slack_failed_once_is_sent_again_alone_and_every_reader_gets_it_once(engine, slack, api,
                                                                                              clock):
    api.failing["UON2"] = 1  # the second on-call DM, after the channel and the first DM went through
    assert raise_alert(engine, "provider_quota", "gpubot:quota:a", "a: quota exceeded")
    _deliver_until_done(engine, slack, clock)
    assert api.refused == 1
    assert {reader: len(_posted(api, reader, "quota exceeded")) for reader in ON_CALL} == dict.fromkeys(ON_CALL, 1)


def test_a_resolve_waits_for_its_trigger_on_each_reader_alone(engine, slack, api, clock):
    api.failing["UON2"] = 1
    assert raise_alert(engine, "provider_quota", "gpubot:quota:a", "a: quota exceeded")
    while deliver_due(engine, slack):
        pass
    assert resolve_alert(engine, "gpubot:quota:a", "a: quota back")
    while deliver_due(engine, slack):
        pass
    # A resolve rewrites its trigger's message (issue #27): one message per reader, nothing new to read.
    assert _posted(api, "UON1", "quota") == ["🚨 [provider_quota] a: quota exceeded"]
    assert _shown(api, "UON1", "quota") == ["✅ Resolved [provider_quota] a: quota back"]
    assert _posted(api, "UON2", "quota") == [], "UON2's resolve waits for its trigger"
    _deliver_until_done(engine, slack, clock)
    for reader in ON_CALL:
        assert _posted(api, reader, "quota") == ["🚨 [provider_quota] a: quota exceeded"], reader
        assert _shown(api, reader, "quota") == ["✅ Resolved [provider_quota] a: quota back"], reader


def _shown(api: FakeSlackApi, channel: str, words: str) -> list[str]:
    """The texts of the messages `channel` shows now that contain `words`."""
    return [m["text"] for m in api.messages.get(channel, {}).values() if words in m.get("text", "")]


def test_a_digest_whose_channel_is_gone_reaches_each_admin_once_though_slack_failed_one(engine, slack, api, clock):
    api.gone, api.failing["UADMIN2"] = {"CDIGEST"}, 1
    with engine.db.session() as session:
        tell(engine, DigestReady(channel="CDIGEST", period="2026-11-01"), session=session)
    _deliver_until_done(engine, slack, clock)
    assert api.refused == 1 and _posted(api, "CDIGEST", "2026-11-01") == []
    assert [len(_posted(api, admin, "2026-11-01")) for admin in ADMINS] == [1, 1]
    with engine.db.session() as session:
        assert outbox.counts(session=session) == {"pending": 0, "delivered": 2, "failed": 1}  # the channel's row


def test_a_digest_chart_slack_failed_once_is_shared_again_without_posting_the_digest_again(engine, slack, api,
                                                                                            clock):
    api.rate_limits["files.completeUploadExternal"] = [1, 1]  # one 429 on the upload's last step
    digest = DigestReady(channel="CDIGEST", period="2026-11-02", month="2026-11", spent=Decimal(30),
                         month_spent=Decimal(30), month_limit=Decimal(500), daily=(Decimal(10), Decimal(20)))
    with engine.db.session() as session:
        tell(engine, digest, session=session)
        tell(engine, chart_of(digest), session=session)
    _deliver_until_done(engine, slack, clock)
    assert api.refused == 1 and len(_posted(api, "CDIGEST", "2026-11-02")) == 1
    shared = [c for c in api.calls_to("files.completeUploadExternal") if c.result.get("ok")]
    assert [c.args["channel_id"] for c in shared] == ["CDIGEST"]


def test_a_digest_chart_whose_channel_is_gone_is_shared_with_each_admin_as_a_user(engine, slack, api, clock):
    api.gone = {"CDIGEST"}
    digest = DigestReady(channel="CDIGEST", period="2026-11-03", month="2026-11", spent=Decimal(30),
                         month_spent=Decimal(30), month_limit=Decimal(500), daily=(Decimal(10), Decimal(20)))
    with engine.db.session() as session:
        tell(engine, chart_of(digest), session=session)
    _deliver_until_done(engine, slack, clock)
    shared = [c for c in api.calls_to("files.completeUploadExternal") if c.result.get("ok")]
    assert sorted(c.args.get("channels") for c in shared) == ADMINS  # never a user id as channel_id


def _die_holding_the_claims(engine, slack, send: bool) -> int:
    """A worker claims every due row, hands each to Slack when `send`, and dies before recording the outcome."""
    with engine.db.session() as session:
        owed = outbox.claim(engine.now(), LEASE, 20, session=session)
    for row in owed if send else ():
        assert slack["slack"].deliver(row.notice).status == "accepted"
    return len(owed)


@pytest.mark.parametrize("sent", [True, False], ids=["slack-took-it", "never-sent"])
def test_a_notice_whose_worker_died_mid_delivery_is_in_slack_once_after_its_claim_runs_out(engine, slack, api, clock,
                                                                                            sent):
    assert raise_alert(engine, "provider_quota", "gpubot:quota:a", "a: quota exceeded")
    assert _die_holding_the_claims(engine, slack, send=sent) == len(ON_CALL)
    clock.advance(seconds=LEASE.total_seconds() + 1)
    _deliver_until_done(engine, slack, clock)
    assert {reader: len(_posted(api, reader, "quota exceeded")) for reader in ON_CALL} == dict.fromkeys(ON_CALL, 1)
    assert len(api.calls_to("conversations.history")) == len(ON_CALL)  # looked, since the dead worker may have sent


def test_a_notice_in_doubt_is_posted_again_when_slack_will_not_show_the_history(engine, slack, api, clock):
    api.refusing["conversations.history"] = "missing_scope"  # an app installed without the history scopes
    assert raise_alert(engine, "provider_quota", "gpubot:quota:a", "a: quota exceeded")
    _die_holding_the_claims(engine, slack, send=True)
    clock.advance(seconds=LEASE.total_seconds() + 1)
    _deliver_until_done(engine, slack, clock)
    # A duplicate rather than a loss: without the scope there is no way to know it was posted.
    assert {reader: len(_posted(api, reader, "quota exceeded")) for reader in ON_CALL} == dict.fromkeys(ON_CALL, 2)


def test_a_notice_in_doubt_waits_while_slack_cannot_show_the_history_and_stays_in_doubt(engine, slack, api, clock):
    assert raise_alert(engine, "provider_quota", "gpubot:quota:a", "a: quota exceeded")
    _die_holding_the_claims(engine, slack, send=True)
    clock.advance(seconds=LEASE.total_seconds() + 1)
    api.down = {"conversations.history"}
    while deliver_due(engine, slack):
        pass
    api.down = set()
    _deliver_until_done(engine, slack, clock)
    assert {reader: len(_posted(api, reader, "quota exceeded")) for reader in ON_CALL} == dict.fromkeys(ON_CALL, 1)


def _fold(engine, prefix: str, gpu: int, at, value: float) -> None:
    """Fold a new crossing of GPU `gpu` into the booking's alert, as the health check does past the page cap."""
    from gpubot.db import alerts as alert_repo
    from gpubot.scheduling.alerts import fold_alert_in

    with engine.db.session() as session:
        row = alert_repo.fold_into(prefix, gpu, at, at, value, session=session)
        assert row is not None
        fold_alert_in(engine, row, replace=7, session=session)


def test_crossings_folded_into_an_alert_update_its_message_on_every_reader_and_its_resolve_keeps_the_count(
        engine, slack, api, clock):
    assert raise_alert(engine, "overheat", "gpubot:overheat:7:0", "#7 GPU 0 is at 95 °C", replace=7)
    _deliver_until_done(engine, slack, clock)
    for n, value in enumerate((96.0, 97.0, 91.0), start=1):
        clock.advance(seconds=30)
        _fold(engine, "gpubot:overheat:7:", n, engine.now(), value)
    api.rate_limits["chat.update"] = [1, 1]  # Slack busy once: the later updates wait, none overtakes it
    _deliver_until_done(engine, slack, clock)
    updates = [c for c in api.calls_to("chat.update") if c.result.get("ok")]
    for reader in ON_CALL:
        assert _posted(api, reader, "overheat") == ["🚨 [overheat] #7 GPU 0 is at 95 °C"], reader
        [shown] = _shown(api, reader, "overheat")
        assert "3 more times since" in shown and "latest: GPU 3 at 91 °C" in shown, shown
        counts = [int(re.search(r"limit (\d+) more", c.args["text"]).group(1)) for c in updates
                  if c.args["channel"] == ("D" + reader[1:] if reader[0] == "U" else reader)]
        assert counts == sorted(counts) and counts[-1] == 3, (reader, counts)
    with engine.db.session() as session:  # Slack only: nothing new paged
        assert outbox.counts(session=session) == {"pending": 0, "delivered": 12, "failed": 0}
    assert resolve_alert(engine, "gpubot:overheat:7:0", "#7 GPU 0 is back to 60 °C")
    _deliver_until_done(engine, slack, clock)
    for reader in ON_CALL:
        assert len(_posted(api, reader, "overheat")) == 1
        [shown] = _shown(api, reader, "overheat")
        assert shown.startswith("✅ Resolved [overheat] #7 GPU 0 is back to 60 °C") and "3 more times" in shown
