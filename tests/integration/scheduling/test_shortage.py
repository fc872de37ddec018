"""Living with a shortage on a real ledger: `or` alternatives, CUDA floors and images, Replace, expected waits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from gpubot.bot.i18n import ENGLISH
from gpubot.bot.progress_lines import step_text
from gpubot.db import attempts as attempt_repo
from gpubot.db import bookings as repo
from gpubot.db import ledger
from gpubot.db import telemetry as telemetry_repo
from gpubot.domain.errors import NothingSells
from gpubot.domain.model import Booking, BookingState, OfferRequest, Shape
from gpubot.domain.ports import GpuReading
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.booking import BookingAsk, book
from gpubot.scheduling.booking.quotes import quote
from gpubot.scheduling.booking.waits import ESTIMATE_TTL, expected_wait, wait_step
from gpubot.scheduling.desk.replace import release_replaced, replace_booking
from gpubot.scheduling.lifecycle.health import check_health

from tests.engine_kit import deliver, make_engine, simulated_policy


def _ask(**kw) -> BookingAsk:
    return BookingAsk(**{"owner": "UALICE", "gpu": "a100", "count": 4, "duration": timedelta(hours=6), **kw})


def test_an_or_booking_lands_on_the_free_alternative_with_advice(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    for name in ("a", "b", "c"):
        engine.providers[name].set_stock("a100", f"{name}-1", 0)
    engine.providers["b"].set_stock("rtx4090", "b-2", 2, Decimal("0.70"))
    booked = book(engine, _ask(alternatives=(Shape("h100", 2), Shape("rtx4090", 2))))
    assert booked.booking.alternatives == (Shape("h100", 2), Shape("rtx4090", 2))
    with engine.db.session() as session:  # typed as it was asked, through the ledger's column and back
        assert repo.get_booking(booked.booking.id, session=session).alternatives == booked.booking.alternatives
    assert [q.request.gpu for q in booked.alternatives] == ["h100", "rtx4090"]
    placed = acquire(engine, booked.booking.id)
    assert (placed.state, placed.gpu, placed.count, placed.provider) == (BookingState.ACTIVE, "rtx4090", 2, "b")
    deliver(engine)
    ready = next(text for _u, text in engine.notifier.dms if "is ready" in text)
    assert "Landed on 2× RTX 4090 24GB (48 GiB) instead of your first choice 4× A100 40GB (160 GiB)" in ready
    assert "mixed precision" in ready and "gradient accumulation over 4 steps" in ready
    deliver(engine)
    assert "Landed on" in engine.notifier.updates[-1][2]


def test_the_cheapest_free_alternative_per_hour_wins(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)  # a100 free at $1.50 ×4 = $6.00/h on a
    engine.providers["c"].set_stock("h100", "c-2", 2, Decimal("2.90"))  # $5.80/h
    placed = acquire(engine, book(engine, _ask(alternatives=(Shape("h100", 2),))).booking.id)
    assert (placed.gpu, placed.provider, placed.price_per_gpu_hour) == ("h100", "c", Decimal("2.90"))


def _cuda_policy(**sections):
    providers = {name: {"kind": "simulated", "stock": [{"gpu": "a100", "region": f"{name}-1", "count": 8,
                                                         "price": price, "max_cuda": cuda}]}
                 for name, price, cuda in (("a", 1.50, "11.8"), ("b", 1.80, "12.4"))}
    providers["c"] = {"kind": "simulated", "max_cuda": "12.0",
                      "stock": [{"gpu": "a100", "region": "c-1", "count": 8, "price": 1.0}]}
    return simulated_policy(providers=providers, **sections)


def test_a_cuda_floor_excludes_older_offers_with_the_reason(database_url, clock):
    engine = make_engine(database_url, _cuda_policy(), clock)
    result = quote(engine, OfferRequest("a100", 4, cuda="12.1"), timedelta(hours=1))
    assert [o.offer.provider for o in result.offers] == ["b"]
    assert sorted((o.provider, why) for o, why in result.excluded) == [
        ("a", "max CUDA 11.8 < 12.1"), ("c", "max CUDA 12.0 < 12.1")]  # c's from its provider config
    placed = acquire(engine, book(engine, _ask(cuda="12.1", image="pytorch/pytorch:2.3.0-cuda12.1")).booking.id)
    spec = engine.providers["b"].launch_specs[-1]
    assert placed.provider == "b" and (spec.cuda, spec.image) == ("12.1", "pytorch/pytorch:2.3.0-cuda12.1")


def test_team_defaults_for_cuda_and_image_apply(database_url, clock):
    policy = _cuda_policy(booking={"default_cuda": "12.1", "default_image": "team/torch:cu121"})
    engine = make_engine(database_url, policy, clock)
    placed = acquire(engine, book(engine, _ask()).booking.id)
    spec = engine.providers["b"].launch_specs[-1]
    assert placed.provider == "b" and (spec.cuda, spec.image) == ("12.1", "team/torch:cu121")


def _hot(engine, clock, booking: Booking) -> None:
    """GPU 0 at 93 °C for the whole `for` window: real heat, which pages."""
    with engine.db.session() as session:
        telemetry_repo.add_samples(booking.id, [GpuReading(0, 90, 93)], clock(), session=session)
    clock.advance(seconds=engine.policy.health.for_.total_seconds())
    with engine.db.session() as session:
        telemetry_repo.add_samples(booking.id, [GpuReading(0, 90, 93)], clock(), session=session)


def test_overheat_offers_replace_which_books_elsewhere_and_bills_the_overlap_at_most_the_grace(database_url,
                                                                                              clock):
    engine = make_engine(database_url, simulated_policy(team={"oncall": ["UONCALL"]}), clock)
    hot = acquire(engine, book(engine, _ask()).booking.id)
    assert hot.provider == "a"
    _hot(engine, clock, hot)
    assert check_health(engine) == 1
    deliver(engine)
    assert engine.notifier.alert_actions[-1] == ["booking_replace"]
    assert engine.notifier.dm_actions[-1] == ["booking_replace"]

    clock.advance(minutes=1)
    replacement = replace_booking(engine, hot.id, "UONCALL")
    assert replace_booking(engine, hot.id, "UALICE").duplicate  # a second click books nothing more
    new = acquire(engine, replacement.booking.id)
    assert (new.state, new.provider, new.replaces) == (BookingState.ACTIVE, "b", hot.id)
    deliver(engine)
    ready = next(text for _u, text in engine.notifier.dms if f"#{new.id} is ready" in text)
    assert f"It replaces #{hot.id}" in ready and engine.notifier.dm_actions[-1] == ["booking_release"]

    grace = engine.policy.health.replace_grace
    clock.advance(seconds=(grace - timedelta(minutes=1)).total_seconds())
    assert release_replaced(engine) == 0
    clock.advance(minutes=1)
    assert release_replaced(engine) == 1 and release_replaced(engine) == 0
    with engine.db.session() as session:
        assert repo.get_booking(hot.id, session=session).state == BookingState.RELEASED
        hot_end = max(i.end for i in ledger.list_intervals(hot.id, session=session))
    overlap = hot_end - new.started_at
    assert timedelta(0) < overlap <= grace


def test_the_hot_booking_message_is_redrawn_when_replace_is_clicked_and_when_the_replacement_is_placed(
        database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    hot = acquire(engine, book(engine, _ask()).booking.id)
    _hot(engine, clock, hot)
    check_health(engine)
    for name in ("b", "c"):  # nowhere else to go yet: the replacement waits in the queue
        engine.providers[name].set_stock("a100", f"{name}-1", 0)
    deliver(engine)
    replacement = replace_booking(engine, hot.id, "UALICE").booking
    deliver(engine)
    message = [text for booking_id, text in engine.notifier.messages if booking_id == hot.id][-1]
    assert f"🔁 Being replaced by #{replacement.id} (released 30m after it is ready)." in message
    assert f"Its replacement #{replacement.id} is looking for capacity elsewhere…" in message

    engine.providers["b"].set_stock("a100", "b-1", 8)
    clock.advance(minutes=5)
    new = acquire(engine, replacement.id)
    assert new.state == BookingState.ACTIVE
    deliver(engine)
    message = [text for booking_id, text in engine.notifier.messages if booking_id == hot.id][-1]
    until = (new.ready_at or new.started_at) + engine.policy.health.replace_grace
    assert f"🔁 Being replaced by #{new.id} (released by {until:%Y-%m-%d %H:%M} UTC at the latest)." in message
    assert f"Its replacement #{new.id} runs on b b-1." in message

    clock.advance(seconds=engine.policy.health.replace_grace.total_seconds())
    assert release_replaced(engine) == 1
    deliver(engine)
    message = [text for booking_id, text in engine.notifier.messages if booking_id == hot.id][-1]
    assert "Released (replaced by" in message and "Being replaced" not in message


def test_the_expected_wait_is_the_median_of_this_hour_from_seeded_attempts(database_url, clock):
    engine = make_engine(database_url, simulated_policy(team={"timezone": "Europe/Berlin"}), clock)
    clock.current = datetime(2026, 11, 20, 13, 30, tzinfo=UTC)  # 14:30 in Berlin
    seeded = [  # (requested at UTC, minutes to launch)
        (datetime(2026, 11, 10, 13, 5, tzinfo=UTC), 12), (datetime(2026, 11, 12, 13, 40, tzinfo=UTC), 45),
        (datetime(2026, 11, 15, 13, 20, tzinfo=UTC), 30), (datetime(2026, 11, 18, 13, 0, tzinfo=UTC), 95),
        (datetime(2026, 11, 1, 13, 0, tzinfo=UTC), 1),   # older than 14 days: left out
        (datetime(2026, 11, 16, 15, 0, tzinfo=UTC), 500),  # another hour
        (datetime(2026, 11, 17, 1, 0, tzinfo=UTC), 4), (datetime(2026, 11, 18, 2, 0, tzinfo=UTC), 6),  # night
    ]
    with engine.db.session() as session:
        for asked, minutes in seeded:
            booking = repo.add_booking(Booking(0, "UALICE", "a100", 4, timedelta(hours=1), BookingState.RELEASED,
                                               asked), session=session)
            session.flush()
            attempt_repo.record_attempt(booking.id, "a", "a-1", "a100", "no_capacity", 10,
                                        asked + timedelta(minutes=1), session=session)
            attempt_repo.record_attempt(booking.id, "a", "a-1", "a100", "launched", 10,
                                        asked + timedelta(minutes=minutes), session=session)
    estimate = expected_wait(engine, "a100")
    assert estimate.samples == 4 and estimate.at_hour == timedelta(minutes=(30 + 45) / 2)  # 12, 30, 45, 95
    assert estimate.night_samples == 2 and estimate.at_night == timedelta(minutes=5)
    assert step_text(wait_step(engine, "a100"), ENGLISH) == (
        "Expected wait for A100 40GB at this hour: 37m (median of 4 in the last 14 days). "
        "At night it was 5m (median of 2): consider `--night`.")
    with engine.db.session() as session:  # one more launch at this hour, 2 min to place
        booking = repo.add_booking(Booking(0, "UBOB", "a100", 4, timedelta(hours=1), BookingState.RELEASED,
                                           clock() - timedelta(minutes=20)), session=session)
        session.flush()
        attempt_repo.record_attempt(booking.id, "a", "a-1", "a100", "launched", 10,
                                    clock() - timedelta(minutes=18), session=session)
    clock.advance(seconds=ESTIMATE_TTL.total_seconds() - 1)
    assert expected_wait(engine, "a100").samples == 4, "reused within its five minutes"
    clock.advance(seconds=1)
    assert expected_wait(engine, "a100").samples == 5


def test_a_price_cap_that_matches_nothing_is_refused_with_the_cheapest_price(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)  # a100 at $1.50 (a), $1.80 (b), $2.10 (c)
    try:
        book(engine, _ask(max_price=Decimal("1")))
    except NothingSells as refused:
        assert (refused.cheapest, refused.cheapest_at, refused.max_price) == (Decimal("1.50"), "a a-1", Decimal("1"))
    else:
        raise AssertionError("a cap below every price must be refused")
    with engine.db.session() as session:
        assert repo.list_bookings(session=session) == []  # nothing was booked
    assert book(engine, _ask(max_price=Decimal("1.5"))).booking.max_price == Decimal("1.5")
