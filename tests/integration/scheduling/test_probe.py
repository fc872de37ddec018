"""Probing every provider: the threaded default and the inline executor (the replay's) give the same answer,
failures included, and only the threaded one overlaps slow probes."""

from __future__ import annotations

import time

import pytest

from domain.errors import AuthFailed
from domain.model import OfferRequest
from domain.policy import policy_from_dict
from providers.simulated import SimulatedCloud
from scheduling.probe import InlineExecutor, probe_offers

REQUEST = OfferRequest("a100", 4)


class _Refusing:
    """A provider whose probe fails: with a provider error, or with a bug."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def offers(self, request: OfferRequest):
        raise self.error


def _clouds(latency: float = 0.0) -> dict:
    policy = policy_from_dict({"providers": {
        name: {"kind": "simulated", "latency": latency,
               "stock": [{"gpu": "a100", "region": f"{name}-1", "count": 8, "price": price}]}
        for name, price in (("a", 1.5), ("b", 1.8))}})
    return {name: SimulatedCloud(name, config) for name, config in policy.enabled_providers().items()}


@pytest.mark.parametrize("executor", [None, InlineExecutor()], ids=["threads", "inline"])
def test_every_offer_and_every_failure_comes_back(executor):
    providers = {**_clouds(), "down": _Refusing(AuthFailed("down", "bad key")),
                 "buggy": _Refusing(KeyError("price"))}
    result = probe_offers(providers, REQUEST, timeout=5, executor=executor)
    assert sorted((o.provider, o.region, o.available) for o in result.offers) == [("a", "a-1", True),
                                                                                  ("b", "b-1", True)]
    assert result.failures == {"down": "auth: bad key", "buggy": "error: KeyError"}


def test_inline_probes_run_one_after_another_in_the_callers_thread():
    clouds = _clouds(latency=0.2)
    started = time.monotonic()
    result = probe_offers(clouds, REQUEST, timeout=5, executor=InlineExecutor())
    assert len(result.offers) == 2 and time.monotonic() - started >= 0.4
    threaded = time.monotonic()
    probe_offers(clouds, REQUEST, timeout=5)
    assert time.monotonic() - threaded < 0.4
