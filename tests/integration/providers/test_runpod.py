"""RunPod against the fake RunPod v2 API on loopback."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.domain.errors import (
    AuthFailed,
    InvalidRequest,
    NoAccess,
    NoCapacity,
    ProviderError,
    QuotaExceeded,
    RateLimited,
    Transient,
)
from gpubot.domain.model import Instance, Offer, OfferRequest, instance_tag
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.runpod.adapter import RunPod
from gpubot.providers.runpod.config import RunPodConfig

from tests.fakes.runpod_api import FakeRunPod

KEY = "runpod-test-key"


class FakeTime:
    """A manual clock for the fake and a sleep that only advances it."""

    def __init__(self) -> None:
        self.at = datetime(2026, 11, 20, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeRunPod]:
    fake = FakeRunPod(KEY)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def fake(server: FakeRunPod, clock: FakeTime) -> FakeRunPod:
    server.reset(clock=clock.now)
    return server


def make(fake: FakeRunPod, clock: FakeTime, key: str = KEY, url: str | None = None, **options) -> RunPod:
    policy = RunPodConfig(**options.pop("policy", {}))
    return RunPod("runpod", policy, key, url or f"{fake.url}/v2", sleep=clock.sleep, **options)


@pytest.fixture
def pod(fake: FakeRunPod, clock: FakeTime) -> Iterator[RunPod]:
    adapter = make(fake, clock)
    yield adapter
    adapter.close()


def spec(booking: int = 5, nonce: str = "cd34", **kw) -> LaunchSpec:
    return LaunchSpec(booking, instance_tag(booking, nonce), **kw)


def wait_ready(pod: RunPod, launched: Instance, seconds: float = 10) -> Instance:
    """Describe until ready: the container's real command starts sshd in its own time."""
    deadline = time.monotonic() + seconds
    while not (described := pod.describe(launched)).ready and time.monotonic() < deadline:
        time.sleep(0.02)
    return described


def offer(gpu_id: str = "NVIDIA GeForce RTX 4090", spot: bool = False, region: str = "any") -> Offer:
    return Offer("runpod", region, "rtx4090", 2, Decimal("0.74"), "USD", spot=spot, ref=gpu_id)


# -- offers -----------------------------------------------------------------------------------------------
def test_offers_are_priced_and_stocked_from_the_catalog(fake: FakeRunPod, pod: RunPod) -> None:
    offers = pod.offers(OfferRequest("a100-80g", 2))
    assert {(o.ref, o.price_per_gpu_hour, o.region, o.available, o.max_cuda) for o in offers} == {
        ("NVIDIA A100-SXM4-80GB", Decimal("1.59"), "any", True, "12.8"),
        ("NVIDIA A100 80GB PCIe", Decimal("1.59"), "any", True, "12.8")}
    [listing] = catalog_reads(fake)
    assert {k: v[0] for k, v in listing.query.items()} == {"include": "AVAILABILITY", "product": "POD",
                                                           "count": "2", "cloud": "SECURE"}


def test_policy_prices_override_the_catalog(fake: FakeRunPod, clock: FakeTime) -> None:
    priced = make(fake, clock, policy={"prices": {"h100": "2.50"}})
    assert {o.price_per_gpu_hour for o in priced.offers(OfferRequest("h100", 8))} == {Decimal("2.50")}


def test_stock_per_data_centre_for_the_policy_regions(fake: FakeRunPod, clock: FakeTime) -> None:
    regional = make(fake, clock, policy={"regions": ["EU-RO-1", "US-TX-3", "CA-MTL-1"]})
    fake.set_free("NVIDIA L40S", "EU-RO-1", 1)
    offers = regional.offers(OfferRequest("l40s", 2))
    assert [(o.region, o.available) for o in offers] == [("EU-RO-1", False), ("US-TX-3", True),
                                                         ("CA-MTL-1", False)]
    assert [o.region for o in regional.offers(OfferRequest("l40s", 1, region="US-TX-3"))] == ["US-TX-3"]


def test_the_cuda_floor_scopes_the_stock_and_goes_to_the_create_body(fake: FakeRunPod, clock: FakeTime) -> None:
    regional = make(fake, clock, policy={"regions": ["EU-RO-1", "US-TX-3"]})
    offers = regional.offers(OfferRequest("rtx4090", 1, cuda="12.6"))
    assert [(o.region, o.available) for o in offers] == [("EU-RO-1", True), ("US-TX-3", False)]
    assert catalog_reads(fake)[0].query["minCudaVersion"] == ["12.6"]
    launched = regional.launch(offers[0], spec(cuda="12.6"))
    assert fake.created[0]["gpu"] == {"id": "NVIDIA GeForce RTX 4090", "count": 1, "minCudaVersion": "12.6"}
    assert launched.region == "EU-RO-1"
    fake.set_free("NVIDIA GeForce RTX 4090", "EU-RO-1", 0)  # the only host at CUDA ≥ 12.6 is now full
    with pytest.raises(NoCapacity):
        regional.launch(offers[0], spec(nonce="ee", cuda="12.6"))


def test_the_catalog_is_read_once_per_probe_round_and_gpu_count(fake: FakeRunPod, pod: RunPod,
                                                                clock: FakeTime) -> None:
    shapes = [OfferRequest("h100", 8), OfferRequest("a100-80g", 8), OfferRequest("l40s", 8), OfferRequest("h100", 1)]
    with ThreadPoolExecutor(4) as executor:
        assert all(executor.map(pod.offers, shapes))
    assert sorted(r.query["count"][0] for r in catalog_reads(fake)) == ["1", "8"]


def test_spot_and_unsold_shapes_get_no_offers(fake: FakeRunPod, pod: RunPod) -> None:
    assert pod.offers(OfferRequest("rtx4090", 1, spot=True)) == []  # v2 has no interruptible pods
    assert pod.offers(OfferRequest("rtx4090", 9)) == []
    assert catalog_reads(fake) == []
    assert pod.offers(OfferRequest("a10", 1)) == [] and pod.offers(OfferRequest("rtx3090", 1)) == []


def test_an_unreadable_catalog_gives_no_stale_prices(fake: FakeRunPod, pod: RunPod) -> None:
    fake.inject("status", path="catalog", status=503, times=3)
    with pytest.raises(Transient):
        pod.offers(OfferRequest("h100", 8))


def catalog_reads(fake: FakeRunPod) -> list:
    return [r for r in fake.requests if r.path == "/v2/catalog/gpus"]


# -- launch, describe, terminate, list ----------------------------------------------------------------------
def test_launch_until_ready_then_terminate_twice(fake: FakeRunPod, clock: FakeTime, pod: RunPod) -> None:
    launched = pod.launch(offer(), spec(start_command="python serve.py", ssh_public_key="ssh-ed25519 AAA x"))
    assert (launched.status, launched.ready, launched.gpu, launched.count) == ("provisioning", False,
                                                                                "rtx4090", 2)
    body = fake.created[0]
    assert body["cloud"] == "SECURE" and body["ports"] == ["22/tcp"] and body["startSsh"] is True
    assert body["args"].startswith("bash -c ") and body["args"].endswith("exec /start.sh; fi; exec sleep infinity'")
    assert "python serve.py" in body["env"]["GPUBOT_START_COMMAND"] and "dataCenterIds" not in body
    assert body["env"]["PUBLIC_KEY"] == "ssh-ed25519 AAA x"
    states = [pod.describe(launched)]
    clock.sleep(2)
    states.append(pod.describe(launched))
    clock.sleep(1)
    states.append(wait_ready(pod, launched))  # sshd comes up once the pod's command ran /start.sh
    assert [(s.status, s.ready) for s in states] == [("provisioning", False), ("starting", False),
                                                     ("running", True)]
    ready = states[-1]
    assert ready.ssh == "ssh root@203.0.113.2 -p 35558" and ready.extra["cost_per_hour"] == 1.48
    clock.sleep(1800)
    pod.terminate(ready)
    pod.terminate(ready)
    assert pod.describe(ready).status == "terminated"
    assert fake.billed_seconds(launched.instance_id) == 3 + 1800


def test_a_regional_offer_is_placed_in_its_data_centre(fake: FakeRunPod, pod: RunPod) -> None:
    launched = pod.launch(offer(region="US-TX-3"), spec())
    assert fake.created[0]["cloud"] == "SECURE" and fake.created[0]["dataCenterIds"] == ["US-TX-3"]
    assert launched.region == "US-TX-3"


def test_list_owned_keeps_only_tagged_pods(fake: FakeRunPod, pod: RunPod) -> None:
    ours = pod.launch(offer(), spec(1, "aa"))
    pod.launch(offer(), LaunchSpec(2, "jupyter-box"))
    assert [(i.instance_id, i.name) for i in pod.list_owned()] == [(ours.instance_id, "gpubot-1-aa")]


def test_telemetry_is_empty_without_temperatures(fake: FakeRunPod, pod: RunPod) -> None:
    launched = pod.launch(offer(), spec())
    fake.make_ready(launched.instance_id)
    fake.set_util(launched.instance_id, [97.0, 3.0])
    assert pod.describe(launched).ready and pod.telemetry(launched) == []


def test_lost_create_response_raises_and_reconcile_finds_it(fake: FakeRunPod, pod: RunPod) -> None:
    fake.inject("lost_response", path="pods", method="POST")
    with pytest.raises(ProviderError):
        pod.launch(offer(), spec(9, "zz"))
    assert [i.name for i in pod.list_owned()] == ["gpubot-9-zz"]
    assert len(fake.created) == 1


# -- vendor errors ------------------------------------------------------------------------------------------
def test_sold_out_is_no_capacity_for_the_offer(fake: FakeRunPod, pod: RunPod) -> None:
    fake.sold_out_gpus.add("NVIDIA H100 80GB HBM3")
    with pytest.raises(NoCapacity) as caught:
        pod.launch(offer("NVIDIA H100 80GB HBM3", region="EU-RO-1"), spec())
    assert (caught.value.scope, caught.value.region) == ("offer", "EU-RO-1")
    fake.sold_out = True
    with pytest.raises(NoCapacity):
        pod.launch(offer(), spec())


def test_wrong_key_is_auth_failed(fake: FakeRunPod, clock: FakeTime) -> None:
    with pytest.raises(AuthFailed):
        make(fake, clock, key="wrong").list_owned()


def test_a_contract_violation_is_invalid_request_never_retried(fake: FakeRunPod, pod: RunPod) -> None:
    with pytest.raises(InvalidRequest, match="validation failed"):
        pod.launch(offer(), LaunchSpec(5, ""))  # name: minLength 1
    assert len(creates(fake)) == 1


def test_any_other_400_means_try_the_next_candidate(fake: FakeRunPod, pod: RunPod) -> None:
    with pytest.raises(NoCapacity, match="unknown GPU type") as caught:
        pod.launch(offer("NVIDIA Imaginary 9000"), spec())
    assert caught.value.scope == "offer"


def test_insufficient_balance_stops_the_provider(fake: FakeRunPod, pod: RunPod) -> None:
    fake.balance_exhausted = True
    with pytest.raises(QuotaExceeded, match="insufficient balance"):
        pod.launch(offer(), spec())
    assert len(creates(fake)) == 1


def test_no_access_to_a_pool_skips_only_that_candidate(fake: FakeRunPod, pod: RunPod) -> None:
    fake.denied_gpus.add("NVIDIA H100 80GB HBM3")
    with pytest.raises(NoAccess) as caught:
        pod.launch(offer("NVIDIA H100 80GB HBM3"), spec())
    assert (caught.value.scope, caught.value.kind) == ("offer", "no_access")
    assert pod.launch(offer("NVIDIA H100 PCIe"), spec(nonce="b")).instance_id


def creates(fake: FakeRunPod) -> list:
    return [r for r in fake.requests if r.method == "POST" and r.path == "/v2/pods"]


# -- transport faults ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("retry_after", [None, "2"])
def test_429_once_is_retried_even_for_create(fake: FakeRunPod, pod: RunPod, retry_after: str | None) -> None:
    fake.inject("ratelimit", path="pods", method="POST", retry_after=retry_after)
    assert pod.launch(offer(), spec()).instance_id


def test_persistent_429_is_rate_limited(fake: FakeRunPod, pod: RunPod) -> None:
    fake.inject("ratelimit", path="pods", times=3)
    with pytest.raises(RateLimited):
        pod.list_owned()


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_retried_then_transient(fake: FakeRunPod, pod: RunPod, status: int) -> None:
    fake.inject("status", path="pods", status=status)
    assert pod.list_owned() == []
    fake.inject("status", path="pods", status=status, times=3)
    with pytest.raises(Transient, match=str(status)):
        pod.list_owned()


def test_a_create_5xx_is_retried_on_the_same_candidate(fake: FakeRunPod, pod: RunPod) -> None:
    fake.inject("status", path="pods", method="POST", status=502)
    launched = pod.launch(offer(), spec())
    assert len(creates(fake)) == 2 and list(fake.pods) == [launched.instance_id]
    fake.inject("status", path="pods", method="POST", status=500, times=3)
    with pytest.raises(Transient):
        pod.launch(offer(), spec(nonce="x"))


def test_a_twin_left_by_a_create_that_failed_late_is_deleted(fake: FakeRunPod, pod: RunPod) -> None:
    fake.inject("late_status", path="pods", method="POST", status=504)  # the pod was made, the answer lost
    launched = pod.launch(offer(), spec(9, "tw"))
    assert len(creates(fake)) == 2 and list(fake.pods) == [launched.instance_id]
    assert [i.name for i in pod.list_owned()] == ["gpubot-9-tw"]


def test_read_timeout_is_transient(fake: FakeRunPod, clock: FakeTime) -> None:
    fake.inject("timeout", path="pods", delay=1.0, times=3)
    with pytest.raises(Transient, match="Timeout"):
        make(fake, clock, timeout=0.2).list_owned()


def test_connection_refused_is_transient(fake: FakeRunPod, clock: FakeTime) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(Transient, match="connection failed"):
        make(fake, clock, url=f"http://127.0.0.1:{port}/v2").list_owned()


def test_malformed_json_is_transient(fake: FakeRunPod, pod: RunPod) -> None:
    fake.inject("malformed", path="pods")
    with pytest.raises(Transient):
        pod.list_owned()


def test_extra_fields_are_ignored(fake: FakeRunPod, pod: RunPod) -> None:
    launched = pod.launch(offer(), spec())
    fake.inject("extra_fields", path="pods/")
    assert pod.describe(launched).instance_id == launched.instance_id


def test_the_booking_image_wins_over_the_policy_image(fake: FakeRunPod, clock: FakeTime) -> None:
    adapter = make(fake, clock, policy={"image": "team/default:1"})
    adapter.launch(offer(), spec(image="pytorch/pytorch:2.3.0-cuda12.1"))
    adapter.launch(offer(), spec(nonce="ef56"))
    assert [body["image"] for body in fake.created] == ["pytorch/pytorch:2.3.0-cuda12.1", "team/default:1"]
    adapter.close()
