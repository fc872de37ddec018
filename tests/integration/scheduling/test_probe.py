"""Probing every provider: the threaded default and the inline executor (the replay's) give the same answer,
failures included, and only the threaded one overlaps slow probes."""

from __future__ import annotations

import threading

import pytest
from gpubot.domain.errors import AuthFailed
from gpubot.domain.model import OfferRequest
from gpubot.providers.registry import policy_from_dict
from gpubot.providers.simulated.adapter import SimulatedCloud
from gpubot.scheduling.probe import InlineExecutor, probe_offers

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
    assert result.failures == {"down": "auth: bad key", "buggy": "internal error: KeyError"}


class _Witness:
    """A provider that notes which thread asked it."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    def offers(self, request: OfferRequest):
        self.threads.append(threading.get_ident())
        return []


def _spans(clouds: dict) -> list[tuple[float, float]]:
    return sorted((start, end) for cloud in clouds.values() for call, start, end in cloud.call_log if call == "offers")


def test_inline_probes_run_one_after_another_in_the_callers_thread():
    clouds, witness = _clouds(latency=0.05), _Witness()
    probe_offers({**clouds, "witness": witness}, REQUEST, timeout=5, executor=InlineExecutor())
    (first, second) = _spans(clouds)
    assert first[1] <= second[0], "the second probe started only after the first had answered"
    assert witness.threads == [threading.get_ident()]
    threaded, witness = _clouds(latency=0.05), _Witness()
    probe_offers({**threaded, "witness": witness}, REQUEST, timeout=5)
    (first, second) = _spans(threaded)
    assert second[0] < first[1], "the pool's probes overlap"
    assert witness.threads != [threading.get_ident()]
