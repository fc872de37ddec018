"""Which call outcomes count as reaching a provider, and what a Reach says from them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from gpubot.domain.errors import AuthFailed, InvalidRequest, NoCapacity, QuotaExceeded, RateLimited, Transient
from gpubot.scheduling.reach import Reach, reached, watch

NOW = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.mark.parametrize(("error", "up"), [
    (None, True), (NoCapacity("p", "sold out"), True), (QuotaExceeded("p", "limit"), True),
    (RateLimited("p", "slow down"), True), (InvalidRequest("p", "bad"), True),
    (AuthFailed("p", "API key was invalid"), False), (Transient("p", "connection failed"), False),
    (OSError("Name or service not known"), False), (KeyError("id"), False)])
def test_a_vendor_refusal_reached_it_and_a_fault_did_not(error, up):
    assert reached(error) is up


def test_a_reach_names_the_providers_down_and_books_while_one_answers():
    reach = Reach(["a", "b"], lambda: NOW)
    assert reach.can_book() and reach.down() == {}  # nothing called yet: unknown, not down
    reach.record("a", AuthFailed("a", "API key was invalid"))
    assert reach.down() == {"a": "API key was invalid"} and reach.can_book()  # b not called yet
    reach.record("b", Transient("b", "connection failed"))
    assert not reach.can_book() and set(reach.down()) == {"a", "b"}
    reach.record("b", NoCapacity("b", "sold out"))
    assert reach.can_book() and set(reach.down()) == {"a"}


class _Cloud:
    def __init__(self) -> None:
        self.fail: Exception | None = None
        self.label = "x"

    def list_owned(self) -> list:
        if self.fail:
            raise self.fail
        return []


def test_a_watched_provider_records_each_call_and_passes_everything_else_through():
    cloud = _Cloud()
    providers = {"c": cloud}
    reach = watch(providers, lambda: NOW)
    assert providers["c"].list_owned() == [] and reach.down() == {}
    cloud.fail = Transient("c", "HTTP 503")
    with pytest.raises(Transient):
        providers["c"].list_owned()
    assert reach.down() == {"c": "HTTP 503"}
    providers["c"].label = "y"
    assert cloud.label == "y" and providers["c"].label == "y"
