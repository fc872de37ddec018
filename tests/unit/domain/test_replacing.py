"""Replace and the per-person GPU limit (domain.replacing): the limit stretches by exactly the replaced booking's
GPUs while it is held, and the replaced booking goes at most the grace after its replacement could be used."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from gpubot.domain.model import Booking, BookingState
from gpubot.domain.replacing import count_gpus, replaced_until, replacements

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
GRACE = timedelta(minutes=30)


def _booking(id_: int, count: int, state: BookingState = BookingState.ACTIVE, **changes) -> Booking:
    return Booking(id=id_, owner="UALICE", gpu="a100", count=count, duration=timedelta(hours=6), state=state,
                   requested_at=T0, **changes)


def test_a_plain_request_fits_up_to_the_limit_and_not_one_gpu_more():
    assert count_gpus(8, 8, 16).fits and not count_gpus(9, 8, 16).fits
    assert (count_gpus(9, 8, 16).total, count_gpus(9, 8, 16).allowed) == (17, 16)


def test_a_replace_of_a_held_booking_stretches_the_limit_by_its_gpus_only():
    hot = _booking(1, 8)
    assert count_gpus(16, 8, 16, hot).fits  # 24 GPUs for at most the grace: 16 plus the hot one's 8
    assert not count_gpus(17, 8, 16, hot).fits  # the case, one GPU more than that, is refused
    assert count_gpus(16, 8, 16, hot).allowed == 24


@pytest.mark.parametrize("state", [BookingState.RELEASED, BookingState.CANCELLED, BookingState.FAILED])
def test_an_ended_booking_stretches_nothing(state):
    assert count_gpus(8, 8, 16, _booking(1, 8, state)).stretch == 0
    assert not count_gpus(16, 8, 16, _booking(1, 8, state)).fits


def test_a_second_replace_while_the_first_overlaps_is_refused():
    # Alice held 8 + 8; #1 is being replaced by #3 (8, running): replacing #2 too would bring her to 32 of 24.
    assert not count_gpus(24, 8, 16, _booking(2, 8)).fits


def test_the_replaced_booking_goes_the_grace_after_its_replacement_could_be_used():
    waiting = _booking(3, 8, BookingState.ACQUIRING, replaces=1)
    assert replaced_until(waiting, GRACE) is None
    booting = _booking(3, 8, BookingState.BOOTING, replaces=1, started_at=T0)
    assert replaced_until(booting, GRACE) == T0 + GRACE
    ready = _booking(3, 8, replaces=1, started_at=T0, ready_at=T0 + timedelta(minutes=4))
    assert replaced_until(ready, GRACE) == T0 + timedelta(minutes=34)


def test_only_a_live_replacement_counts():
    live, gone = _booking(3, 8, replaces=1), _booking(4, 8, BookingState.FAILED, replaces=2)
    assert replacements([_booking(1, 8), _booking(2, 8), live, gone]) == {1: live}
