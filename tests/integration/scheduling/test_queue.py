"""The waiting line's availability round on a real ledger over simulated clouds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpubot.db import bookings as repo
from gpubot.domain.model import Booking, BookingState, OfferRequest, Shape
from gpubot.scheduling.acquisition.queue import refresh_availability, shape_key
from gpubot.scheduling.booking.launch_options import booking_requests

from tests.engine_kit import make_engine, simulated_policy

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def _booking(**changes) -> Booking:
    base = Booking(id=0, owner="UALICE", gpu="a100", count=1, duration=timedelta(hours=1),
                   state=BookingState.QUEUED, requested_at=T0)
    return base.with_(**changes)


def test_the_round_probes_every_shape_any_queued_booking_wants_once_in_line_order(database_url, clock):
    engine = make_engine(database_url, simulated_policy(booking={"default_cuda": "12.1"}), clock)
    either = (Shape("h100", 8), Shape("a100", 4))
    shapes = [{"count": 4}, {}, {"alternatives": either}, {"cuda": "12.4"}, {"spot": True},
              {"gpu": "h100", "count": 2, "alternatives": (Shape("a100", 1),)}, {"count": 4, "provider_wanted": "b"},
              {"state": BookingState.ACTIVE, "gpu": "l4"}, {"state": BookingState.SCHEDULED, "gpu": "t4"},
              {"cuda": "12.4", "max_price": None}, {"alternatives": either, "owner": "UBOB"}]
    with engine.db.session() as session:
        for changes in shapes:
            repo.add_booking(_booking(**changes), session=session)
        queued = repo.list_bookings(session=session, states=[BookingState.QUEUED])
    watched = [OfferRequest("l4", 1), OfferRequest("a100", 4)]
    every = [*(r for booking in queued for r in booking_requests(engine, booking)), *watched]
    expected = list(dict.fromkeys(shape_key(r) for r in every))  # what probing each booking would ask, in order
    before = sum(p.calls["offers"] for p in engine.providers.values())
    results = refresh_availability(engine, watched)
    assert list(results) == expected
    assert {("a100", 1, False, "12.1"), ("a100", 1, False, "12.4"), ("h100", 8, False, "12.1")} <= set(results)
    assert sum(p.calls["offers"] for p in engine.providers.values()) - before == 3 * len(expected)
