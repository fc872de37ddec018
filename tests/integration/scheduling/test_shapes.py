"""A shape no configured cloud sells is refused at once, naming the largest shape on offer (never queued)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from gpubot.db import bookings as repo
from gpubot.domain.errors import Refused
from gpubot.domain.model import OfferRequest
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.booking.shapes import largest_on_offer

from tests.engine_kit import make_engine, simulated_policy


def _policy(h100_per_region: int = 8):
    providers = {name: {"kind": "simulated", "stock": [{"gpu": "h100", "region": f"{name}-1",
                                                         "count": h100_per_region, "price": price}]}
                 for name, price in (("a", 3.99), ("b", 4.50))}
    return simulated_policy(providers=providers, booking={"max_gpus_per_user": 64})


def _refusal(engine, count: int, **ask) -> str:
    with pytest.raises(Refused) as caught:
        book(engine, BookingAsk(owner="UALICE", gpu="h100", count=count, duration=timedelta(hours=2), **ask))
    return str(caught.value)


def test_sixteen_h100_where_clouds_sell_eight_is_refused_naming_eight(database_url, clock):
    engine = make_engine(database_url, _policy(), clock)
    assert _refusal(engine, 16) == ("No configured cloud sells more than 8× H100 80GB in one machine; book "
                                    "`h100x8`, or split the work over several bookings.")
    with engine.db.session() as session:
        assert repo.list_bookings(session=session) == []  # nothing was queued


def test_the_largest_size_need_not_be_a_power_of_two(database_url, clock):
    engine = make_engine(database_url, _policy(h100_per_region=6), clock)
    assert "more than 6× H100 80GB" in _refusal(engine, 16)
    assert "more than 6× H100 80GB" in _refusal(engine, 7)


def test_filters_are_kept_and_a_gpu_sold_nowhere_says_so(database_url, clock):
    engine = make_engine(database_url, _policy(), clock)
    assert "more than 8× H100 80GB in one machine with those filters" in _refusal(engine, 12, provider="b")
    with pytest.raises(Refused) as caught:
        book(engine, BookingAsk(owner="UALICE", gpu="l40s", count=2, duration=timedelta(hours=2)))
    assert str(caught.value).startswith("No configured cloud offers 2× L40S 48GB.")


def test_the_search_probes_a_handful_of_sizes(database_url, clock):
    engine = make_engine(database_url, _policy(h100_per_region=5), clock)
    calls_before = engine.providers["a"].calls["offers"]
    assert largest_on_offer(engine, OfferRequest("h100", 64), timedelta(hours=1)) == 5
    assert engine.providers["a"].calls["offers"] - calls_before <= 8  # 32, 16, 8, 4, then 6, 5: log2 steps
