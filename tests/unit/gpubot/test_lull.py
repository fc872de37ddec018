"""The lull the work after an ack waits for: none while an ack is in flight, `quiet` after the last one, and never
longer than `longest` after the ack whose work waits."""

from __future__ import annotations

import threading
import time

from gpubot.lull import Lull


def _waited(lull: Lull, since: float | None = None) -> float:
    started = time.monotonic()
    lull.wait(started if since is None else since)
    return time.monotonic() - started


def test_with_no_ack_in_flight_or_lately_the_work_starts_at_once():
    assert _waited(Lull(quiet=5.0, longest=30.0)) < 1.0


def test_the_work_waits_out_the_quiet_after_the_last_ack():
    lull = Lull(quiet=0.3, longest=30.0)
    with lull.acking():
        pass
    assert 0.25 <= _waited(lull) < 5.0


def test_while_an_ack_is_in_flight_the_work_waits_until_the_longest_wait_has_passed():
    lull = Lull(quiet=0.05, longest=0.5)
    with lull.acking():
        assert 0.45 <= _waited(lull) < 5.0
        assert _waited(lull, since=time.monotonic() - 1.0) < 0.2  # acked a second ago: already waited its longest


def test_the_work_starts_once_the_ack_in_flight_is_done():
    lull, done = Lull(quiet=0.05, longest=30.0), threading.Event()
    acking = lull.acking()
    acking.__enter__()
    waiter = threading.Thread(target=lambda: (lull.wait(time.monotonic()), done.set()))
    waiter.start()
    assert not done.wait(0.3)
    acking.__exit__(None, None, None)
    assert done.wait(5.0)
    waiter.join()
