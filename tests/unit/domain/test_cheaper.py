"""Waiting for cheaper capacity (domain.cheaper): when the GPUs held free, and whether a booking waits for them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpubot.domain.cheaper import (
    Ahead,
    Priced,
    expected_end,
    frees_at,
    held_share,
    likely_end,
    released_by,
    wait_for_cheaper,
)
from gpubot.domain.model import Booking, BookingState, Offer
from gpubot.domain.policy import IdlePolicy

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
UNTIL = NOW + timedelta(hours=2)


def _at(minutes: int) -> datetime:
    return NOW + timedelta(minutes=minutes)


def _priced(provider: str, price: str, free_in: int | None = None, count: int = 2, available: bool = False
            ) -> Priced:
    offer = Offer(provider, f"{provider}-1", "a100", count, Decimal(price), "USD", available=available)
    return Priced(offer, Decimal(price), None if free_in is None else _at(free_in))


def test_the_gpus_free_when_enough_holders_have_ended_for_those_queued_ahead_and_then_this_booking():
    held = [(_at(90), 4), (_at(30), 2), (_at(60), 2)]
    assert frees_at(NOW, held, wanted=2) == _at(30)
    assert frees_at(NOW, held, wanted=3) == _at(60)  # the first holder's 2 GPUs are too few
    assert frees_at(NOW, held, wanted=2, ahead=[Ahead(2, UNTIL)]) == _at(60)  # the 2 freed first go to the one ahead
    assert frees_at(NOW, held, wanted=8, ahead=[Ahead(1, UNTIL)]) is None  # 8 held in all: never enough
    assert frees_at(NOW, [], wanted=1) is None


def test_a_booking_ahead_whose_wait_ends_before_its_gpus_free_leaves_them_to_those_behind_it():
    held = [(_at(30), 2), (_at(60), 2), (_at(90), 4)]
    # the first ahead would get the 2 freed at 30 min, in its wait; the second's 4 free only at 90, after its wait
    # ends at 75: it takes another offer then, and this booking gets the 2 freed at 60
    ahead = [Ahead(2, _at(40)), Ahead(4, _at(75))]
    assert frees_at(NOW, held, wanted=2, ahead=ahead) == _at(60)
    # with the second's wait lasting past 90 it takes the 4 it needs first: this booking's 2 are the last to free
    assert frees_at(NOW, held, wanted=2, ahead=[Ahead(2, _at(40)), Ahead(4, _at(95))]) == _at(90)
    # in queue order: a booking ahead that leaves takes nothing, and the next one in the queue is served first
    assert frees_at(NOW, held, wanted=2, ahead=[Ahead(4, _at(20)), Ahead(2, _at(40))]) == _at(60)


def test_a_booking_ahead_whose_gpus_are_free_now_takes_them_even_at_the_end_of_its_wait():
    assert frees_at(NOW, [(_at(-5), 2), (_at(30), 2)], wanted=2, ahead=[Ahead(2, NOW)]) == _at(30)


def test_a_holder_past_its_booked_end_frees_now_not_in_the_past():
    assert frees_at(NOW, [(_at(-10), 4)], wanted=2) == NOW


def test_it_waits_for_a_cheaper_offer_expected_free_before_the_wait_ends():
    now_offer = _priced("east", "2.48", available=True)
    waiting = wait_for_cheaper([_priced("west", "1.60", free_in=45)], now_offer, NOW, UNTIL)
    assert waiting is not None
    assert (waiting.waits_for.offer.provider, waiting.frees_at, waiting.until) == ("west", _at(45), UNTIL)
    assert waiting.now is now_offer


def test_it_takes_the_free_offer_when_the_cheaper_one_frees_too_late_or_never():
    now_offer = _priced("east", "2.48", available=True)
    assert wait_for_cheaper([_priced("west", "1.60", free_in=121)], now_offer, NOW, UNTIL) is None
    assert wait_for_cheaper([_priced("west", "1.60")], now_offer, NOW, UNTIL) is None


def test_a_taken_offer_that_is_not_cheaper_is_not_worth_a_wait():
    now_offer = _priced("west", "1.60", available=True)
    assert wait_for_cheaper([_priced("east", "2.48", free_in=5), _priced("same", "1.60", free_in=5)], now_offer,
                            NOW, UNTIL) is None


def test_the_wait_ends_at_its_deadline_and_nothing_free_means_the_queue_anyway():
    cheaper = [_priced("west", "1.60", free_in=130)]
    assert wait_for_cheaper(cheaper, _priced("east", "2.48", available=True), UNTIL, UNTIL) is None
    assert wait_for_cheaper([_priced("west", "1.60", free_in=5)], None, NOW, UNTIL) is None


def test_of_several_cheaper_offers_in_time_it_waits_for_the_cheapest_per_hour_of_the_whole_shape():
    now_offer = _priced("east", "2.48", available=True)
    offers = [_priced("spotty", "1.95", free_in=10), _priced("pool", "0", free_in=100),
              _priced("west", "1.60", free_in=20), _priced("late", "0", free_in=200)]
    assert wait_for_cheaper(offers, now_offer, NOW, UNTIL).waits_for.offer.provider == "pool"
    # an alternative shape of 1 GPU at $2.00 costs less per hour than 2 GPUs at $1.60: per hour of the whole shape
    alternative = _priced("alt", "2.00", free_in=30, count=1)
    assert wait_for_cheaper([offers[2], alternative], now_offer, NOW, UNTIL).waits_for.offer.provider == "alt"


def test_a_holder_reminded_of_idle_gpus_is_expected_to_free_them_when_the_grace_of_its_rule_ends():
    idle = IdlePolicy(action="release", grace=timedelta(minutes=30), no_process_grace=timedelta(minutes=10))
    holder = Booking(id=1, owner="U1", gpu="a100", count=4, duration=timedelta(hours=6), requested_at=NOW,
                     state=BookingState.ACTIVE,
                     ends_at=_at(300), idle_reminded_at=_at(-5), idle_rule="no_process")
    assert released_by(idle, holder, NOW) == _at(5)
    assert expected_end(holder.ends_at, released_by(idle, holder, NOW)) == _at(5)
    assert released_by(idle, replace(holder, idle_rule="idle"), NOW) == _at(25)
    assert released_by(idle.model_copy(update={"action": "remind"}), holder, NOW) is None  # nobody releases it
    assert released_by(idle, replace(holder, idle_kept_since=_at(-60)), NOW) is None  # its owner kept it
    assert released_by(idle, replace(holder, snoozed_until=_at(30)), NOW) is None
    assert released_by(idle, replace(holder, idle_reminded_at=None), NOW) is None
    assert expected_end(holder.ends_at, None) == _at(300)


def test_the_usual_held_share_is_the_median_once_enough_bookings_have_finished():
    assert held_share(0.5, 5, minimum=5) == 0.5
    assert held_share(0.5, 4, minimum=5) is None  # too few to go on
    assert held_share(None, 0, minimum=0) is None  # none finished: no share


def test_a_holder_is_likely_to_end_at_the_usual_share_of_its_booked_time_while_that_is_ahead():
    started, booked = _at(-60), timedelta(hours=4)
    ends = started + booked  # 3 hours from now
    assert likely_end(started, booked, ends, 0.5, NOW) == _at(60)  # half of 4 h after its start
    assert likely_end(started, booked, ends, None, NOW) == ends  # no history: the booked end
    assert likely_end(started, booked, ends, 0.2, NOW) == ends  # 48 min after its start has passed: it uses its slot
    assert likely_end(None, booked, ends, 0.5, NOW) == ends
