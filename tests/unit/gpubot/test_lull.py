"""The lull the work after an ack waits for: none while an ack is in flight, `quiet` after the last one, and never
longer than `longest` after the ack whose work waits; none at all when no ack began after its own."""

from __future__ import annotations

import threading
import time

from gpubot.lull import Lull


def _acked(lull: Lull) -> tuple[float, int]:
    """An ack that has come and gone, and its mark."""
    with lull.acking():
        return lull.mark()


def _waited(lull: Lull, mark: tuple[float, int]) -> float:
    started = time.monotonic()
    lull.wait(mark)
    return time.monotonic() - started


def test_the_work_of_the_last_ack_to_begin_starts_at_once():
    lull = Lull(quiet=5.0, longest=30.0)
    _acked(lull)
    assert _waited(lull, _acked(lull)) < 1.0


def test_the_work_waits_out_the_quiet_after_a_later_ack():
    lull = Lull(quiet=0.3, longest=30.0)
    mark = _acked(lull)
    _acked(lull)
    assert 0.25 <= _waited(lull, mark) < 5.0


def test_while_a_later_ack_is_in_flight_the_work_waits_until_the_longest_wait_has_passed():
    lull = Lull(quiet=0.05, longest=0.5)
    mark = _acked(lull)
    with lull.acking():
        assert 0.45 <= _waited(lull, mark) < 5.0
        assert _waited(lull, (time.monotonic() - 1.0, mark[1])) < 0.2  # acked a second ago: waited its longest


def test_the_work_starts_once_the_later_ack_in_flight_is_done():
    lull, done = Lull(quiet=0.05, longest=30.0), threading.Event()
    mark = _acked(lull)
    acking = lull.acking()
    acking.__enter__()
    waiter = threading.Thread(target=lambda: (lull.wait(mark), done.set()))
    waiter.start()
    assert not done.wait(0.3)
    acking.__exit__(None, None, None)
    assert done.wait(5.0)
    waiter.join()


def test_an_ack_that_begins_within_the_grace_holds_the_work_back():
    lull, done = Lull(quiet=1.0, longest=30.0, grace=0.2), threading.Event()
    mark = _acked(lull)
    waiter = threading.Thread(target=lambda: (lull.wait(mark), done.set()))
    waiter.start()
    _acked(lull)  # the next ack of a burst, while the worker is still in its grace
    assert not done.wait(0.6)  # past the grace: now it waits out the quiet after that ack
    assert done.wait(5.0)
    waiter.join()
