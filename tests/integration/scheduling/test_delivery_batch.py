"""A delivery turn on real SQLite and PostgreSQL (issue #26): one transaction claims the batch and one records
every row's outcome, each retry still waiting as its own answer said; a worker killed after Slack took the turn's
messages and before that record posts none of them again; a slow turn records as it goes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
from gpubot.bot.app import outbox_client
from gpubot.bot.notifier import SlackNotifier
from gpubot.db import bookings as repo
from gpubot.db import outbox
from gpubot.domain.booking_view import BookingView
from gpubot.domain.model import BookingState
from gpubot.domain.notices import BookingReady, ExpiryWarning, Notice
from gpubot.domain.ports import Delivery
from gpubot.scheduling.booking.booking import BookingAsk
from gpubot.scheduling.delivery import LEASE, deliver_due, tell
from gpubot.scheduling.desk.request import request
from slack_sdk import WebClient
from sqlalchemy import event

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.engine_kit import make_engine, simulated_policy


def _warning(booking_id: int) -> ExpiryWarning:
    return ExpiryWarning(to="UALICE", booking_id=booking_id, gpu="a100", count=4, offset=timedelta(minutes=15))


@pytest.fixture
def engine(database_url, clock):
    return make_engine(database_url, simulated_policy(), clock)


@pytest.fixture
def api() -> Iterator[FakeSlackApi]:
    fake = FakeSlackApi()
    fake.start()
    yield fake
    fake.stop()


def _owe(engine, *notices: Notice) -> None:
    with engine.db.session() as session:
        for notice in notices:
            tell(engine, notice, session=session)


def _transactions(engine) -> Counter:
    counts: Counter = Counter()
    event.listen(engine.db.engine, "begin", lambda _connection: counts.update(["begun"]))
    return counts


class _Scripted:
    """A channel answering each expiry warning as scripted for its booking (accepted when not), calling `during`
    with each notice as it is handed over."""

    def __init__(self, answers: dict[int, Delivery] | None = None, during=None) -> None:
        self.answers, self.during, self.tried = answers or {}, during, []

    def deliver(self, notice: Notice, in_doubt: bool = False, booking: BookingView | None = None) -> Delivery:
        self.tried.append(notice)
        if self.during:
            self.during(notice)
        return self.answers.get(notice.booking_id, Delivery("accepted"))  # type: ignore[attr-defined]


def test_a_turn_is_one_claim_and_one_record_and_each_row_keeps_the_wait_its_answer_asked(engine, clock):
    _owe(engine, *[_warning(n) for n in (1, 2, 3, 4)])
    channel = _Scripted({2: Delivery("retry", retry_after=5, error="ratelimited"),
                         3: Delivery("retry", error="fatal_error"), 4: Delivery("refused", error="invalid_blocks")})
    begun = _transactions(engine)
    assert deliver_due(engine, {"slack": channel}) == 4
    assert begun["begun"] == 2, "the claim and one record of the whole turn"
    with engine.db.session() as session:
        assert outbox.counts(session=session) == {"pending": 2, "delivered": 1, "failed": 1}
    clock.advance(seconds=0.9)
    assert deliver_due(engine, {"slack": channel}) == 0  # #3 backs off 1 s (its first attempt), #2 its 5 s
    clock.advance(seconds=0.1)
    channel.answers = {}
    assert deliver_due(engine, {"slack": channel}) == 1 and channel.tried[-1] == _warning(3)
    clock.advance(seconds=3.9)
    assert deliver_due(engine, {"slack": channel}) == 0
    clock.advance(seconds=0.1)
    assert deliver_due(engine, {"slack": channel}) == 1 and channel.tried[-1] == _warning(2)
    with engine.db.session() as session:
        assert outbox.counts(session=session) == {"pending": 0, "delivered": 3, "failed": 1}


class _Killed(BaseException):
    """The worker's process dies here (nothing after it runs; a channel's Exception would be caught)."""


class _DiesAfter:
    """The Slack channel, with the process killed right after Slack took the notice `last` picks."""

    def __init__(self, slack: SlackNotifier, last) -> None:
        self.slack, self.last, self.handed = slack, last, []

    def deliver(self, notice: Notice, in_doubt: bool = False, booking: BookingView | None = None) -> Delivery:
        result = self.slack.deliver(notice, in_doubt=in_doubt, booking=booking)
        self.handed.append((type(notice).__name__, result.status, notice.key))
        if self.last(notice):
            raise _Killed
        return result


def test_a_worker_killed_after_slack_took_its_turn_before_recording_it_posts_nothing_twice(engine, api, clock):
    client = WebClient(token="xoxb-test", base_url=f"{api.base}/api/")
    slack = SlackNotifier(client, engine.policy, sender=outbox_client(client))
    booked = request(engine, BookingAsk(owner="UALICE", gpu="a100", count=2, duration=timedelta(hours=3),
                                        channel="CGPU"))
    assert booked.booking.state == BookingState.ACTIVE
    dying = _DiesAfter(slack, lambda notice: isinstance(notice, BookingReady))
    with pytest.raises(_Killed):
        deliver_due(engine, {"slack": dying})
    assert [(kind, status) for kind, status, _key in dying.handed] == [
        ("BookingRequested", "accepted"), ("BookingProgress", "accepted"), ("BookingReady", "accepted")]
    [message] = [c for c in api.calls_to("chat.postMessage") if c.args.get("channel") == "CGPU"]
    with engine.db.session() as session:  # Slack has the turn's messages; the ledger never heard so
        assert not any(outbox.was_delivered("slack", key, session=session) for _kind, _status, key in dying.handed)
        assert repo.get_booking(booked.booking.id, session=session).message_ts is None
    clock.advance(seconds=LEASE.total_seconds() + 1)  # the dead worker's claims run out
    while deliver_due(engine, {"slack": slack}):
        pass
    assert [c.args["channel"] for c in api.calls_to("chat.postMessage")] == ["CGPU", "UALICE"], "none posted again"
    assert len(api.calls_to("conversations.history")) >= 2  # each in doubt, looked for before it is sent
    with engine.db.session() as session:
        assert outbox.counts(session=session)["pending"] == 0
        kept = repo.get_booking(booked.booking.id, session=session)
    assert (kept.channel, kept.message_ts) == ("CGPU", message.result["ts"]), "the message found is recorded"


def test_a_slow_turn_records_what_slack_took_before_half_its_lease_has_passed(engine, clock):
    _owe(engine, *[_warning(n) for n in (1, 2, 3, 4)])
    recorded: list[int] = []

    def slow(_notice: Notice) -> None:  # what the ledger shows as each is handed over; each call takes a third
        with engine.db.session() as session:  # of the lease
            recorded.append(outbox.counts(session=session)["delivered"])
        clock.advance(seconds=LEASE.total_seconds() / 3)

    assert deliver_due(engine, {"slack": _Scripted(during=slow)}) == 4
    assert recorded == [0, 0, 2, 3], "from half the lease on, each row is recorded as soon as it is delivered"
    with engine.db.session() as session:
        assert outbox.counts(session=session) == {"pending": 0, "delivered": 4, "failed": 0}
