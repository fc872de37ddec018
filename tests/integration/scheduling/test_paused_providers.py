"""Paused providers: skipped by quotes and launches at once on this replica, within PAUSED_TTL on the others."""

from __future__ import annotations

from gpubot.domain.model import OfferRequest
from gpubot.scheduling.booking import quotes
from gpubot.scheduling.booking.admin import set_provider_paused
from gpubot.scheduling.booking.quotes import fetch_offers

from tests.engine_kit import make_engine, simulated_policy


def _providers_offering(engine) -> set[str]:
    return {o.provider for o in fetch_offers(engine, OfferRequest("a100", 4), fresh=True).offers}


def test_a_pause_takes_effect_at_once_on_the_replica_that_made_it(database_url, clock):
    engine = make_engine(database_url, simulated_policy(), clock)
    assert _providers_offering(engine) == {"a", "b", "c"}
    set_provider_paused(engine, "b", True, "UADMIN")
    assert _providers_offering(engine) == {"a", "c"}
    set_provider_paused(engine, "b", False, "UADMIN")
    assert _providers_offering(engine) == {"a", "b", "c"}


def test_another_replica_sees_a_pause_once_its_cache_expires(database_url, clock, monkeypatch):
    first = make_engine(database_url, simulated_policy(), clock)
    second = make_engine(database_url, simulated_policy(), clock)
    assert _providers_offering(second) == {"a", "b", "c"}
    set_provider_paused(first, "c", True, "UADMIN")
    assert _providers_offering(second) == {"a", "b", "c"}, "read from the cache within PAUSED_TTL"
    monkeypatch.setattr(quotes, "PAUSED_TTL", 0.0)
    assert _providers_offering(second) == {"a", "b"}
