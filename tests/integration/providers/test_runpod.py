"""RunPod against the fake RunPod v2 API on loopback."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from domain.errors import AuthFailed, InvalidRequest, NoCapacity, ProviderError, RateLimited, Transient
from domain.model import Instance, Offer, OfferRequest, instance_tag
from domain.policy import ProviderPolicy
from domain.ports import LaunchSpec
from providers.runpod import RunPod
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
    policy = ProviderPolicy(kind="runpod", **options.pop("policy", {}))
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
def test_offers_from_dated_table_and_policy_prices(fake: FakeRunPod, clock: FakeTime, pod: RunPod) -> None:
    offers = pod.offers(OfferRequest("a100-80g", 2))
    assert {(o.ref, o.price_per_gpu_hour, o.region, o.available) for o in offers} == {
        ("NVIDIA A100-SXM4-80GB", Decimal("1.59"), "any", True),
        ("NVIDIA A100 80GB PCIe", Decimal("1.59"), "any", True)}
    priced = make(fake, clock, policy={"prices": {"rtx3090": "0.22", "h100": "2.50"}})
    assert [o.price_per_gpu_hour for o in priced.offers(OfferRequest("rtx3090", 1))] == [Decimal("0.22")]
    assert {o.price_per_gpu_hour for o in priced.offers(OfferRequest("h100", 8))} == {Decimal("2.50")}
    assert fake.requests == []


def test_offers_spot_regions_and_unsold_shapes(fake: FakeRunPod, clock: FakeTime, pod: RunPod) -> None:
    assert [(o.price_per_gpu_hour, o.spot) for o in pod.offers(OfferRequest("rtx4090", 1, spot=True))] == [
        (Decimal("0.34"), True)]
    regional = make(fake, clock, policy={"regions": ["EU-RO-1", "US-TX-3"]})
    assert [o.region for o in regional.offers(OfferRequest("l40s", 1))] == ["EU-RO-1", "US-TX-3"]
    assert [o.region for o in regional.offers(OfferRequest("l40s", 1, region="US-TX-3"))] == ["US-TX-3"]
    assert pod.offers(OfferRequest("a10", 1)) == [] and pod.offers(OfferRequest("rtx4090", 9)) == []
    assert pod.offers(OfferRequest("rtx3090", 1)) == []


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


def test_spot_launch_uses_community_cloud_in_the_offer_region(fake: FakeRunPod, pod: RunPod) -> None:
    launched = pod.launch(offer(spot=True, region="EU-RO-1"), spec())
    assert fake.created[0]["cloud"] == "COMMUNITY" and fake.created[0]["dataCenterIds"] == ["EU-RO-1"]
    assert launched.region == "EU-RO-1"


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


def test_validation_error_is_invalid_request(pod: RunPod) -> None:
    with pytest.raises(InvalidRequest, match="validation failed"):
        pod.launch(offer("NVIDIA Imaginary 9000"), spec())


def test_unknown_400_is_transient(fake: FakeRunPod, pod: RunPod) -> None:
    fake.route("POST", r"/v2/pods", lambda r: (400, {"detail": "Something odd.", "status": 400}))
    fake.routes.insert(0, fake.routes.pop())
    with pytest.raises(Transient, match="Something odd"):
        pod.launch(offer(), spec())


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


def test_create_500_is_not_repeated(fake: FakeRunPod, pod: RunPod) -> None:
    fake.inject("status", path="pods", method="POST", status=500)
    with pytest.raises(Transient):
        pod.launch(offer(), spec())
    assert len(fake.requests) == 1


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
