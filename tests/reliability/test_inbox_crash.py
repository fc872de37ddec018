"""The inbox over real processes: `gpubot serve` is SIGKILLed ~0.3 s after it acked `/gpu book`, then restarted on
the same ledger; the command either left its booking or its sender is told (response_url) to send it again —
never silence."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from urllib.parse import parse_qs

import pytest
from gpubot.db.tables.bookings import BookingRow
from gpubot.db.tables.delivery import InboxRow
from sqlmodel import select

from gpubot.inbox import INTERRUPTED_TEXT
from gpubot.sandbox.requests import slash_command_body
from tests.reliability.crash_driver import CrashRig
from tests.reliability.figures import FULL, record, size

KILL_AFTER_ACK = 0.3


def _key(body: bytes) -> str:
    """The inbox row's key of a slash command: the hash of Slack's trigger_id with its sender (a copy re-encoded on
    the way is the same request; Slack gives every command a trigger_id)."""
    form = parse_qs(body.decode())
    return hashlib.sha256(f"trigger:{form['user_id'][0]}:{form['trigger_id'][0]}".encode()).hexdigest()


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL needs POSIX")
@pytest.mark.timeout(3600 if FULL else 300)
def test_a_command_killed_after_its_ack_is_recovered_or_answered(tmp_path):
    rig = CrashRig(tmp_path, seed=11, latency=0.4)  # every cloud call takes 0.4 s: the kill lands mid-work
    trials = size(short=3, full=50)
    booked = interrupted = silent = 0
    try:
        for trial in range(trials):
            bot = rig.start()
            user, key = f"UINBOX{trial}", f"inbox{trial}"
            body = slash_command_body("book h100x1 1h --provider runpod", user=user, channel="CGPU",
                                      response_url=rig.api.response_url(key))
            assert bot.post(body).status_code == 200
            time.sleep(KILL_AFTER_ACK)
            bot.process.send_signal(signal.SIGKILL)
            bot.process.wait(10)
            rig.start()  # start-up answers what the killed process left unfinished, before it serves
            replies = [c.args.get("text", "") for c in rig.api.calls_to("response_url") if c.args["_key"] == key]
            with rig.db.session() as session:
                has_booking = bool(session.exec(select(BookingRow).where(BookingRow.owner == user)).first())
            with rig.db.inbox.session() as session:  # the inbox's own SQLite file beside the ledger
                open_rows = session.exec(select(InboxRow).where(InboxRow.done_at.is_(None))).all()
                recorded = session.get(InboxRow, _key(body))
            told = any(INTERRUPTED_TEXT in text for text in replies)
            booked += has_booking
            interrupted += told
            silent += not (has_booking or told)
            assert has_booking or told, f"trial {trial}: no booking and no reply"
            assert recorded is not None, "the acked command was recorded in the inbox"
            assert not open_rows, "start-up leaves no inbox row unfinished"
            rig.bot.stop()
            print(f"[inbox] trial {trial}: booking {has_booking}, told {told}", flush=True)
    finally:
        rig.close()
    record("inbox", f"commands recovered in {trials - silent}/{trials} trials (SIGKILL {KILL_AFTER_ACK} s after the "
                    f"ack of /gpu book): booking kept {booked}, sender told to send again {interrupted}, silent "
                    f"{silent}")
