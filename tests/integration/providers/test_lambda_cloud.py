"""LambdaCloud against the fake Lambda API on loopback."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.domain.errors import (
    AuthFailed,
    InvalidRequest,
    NoCapacity,
    ProviderError,
    QuotaExceeded,
    RateLimited,
    Transient,
)
from gpubot.domain.model import OfferRequest, instance_tag
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.lambda_cloud.adapter import LambdaCloud
from gpubot.providers.lambda_cloud.config import LambdaConfig

from tests.fakes.lambda_api import FakeLambda

KEY = "lambda-test-key"


class FakeTime:
    """One manual clock for the adapter (monotonic seconds) and the fake (datetimes)."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return datetime(2026, 11, 20, tzinfo=UTC) + timedelta(seconds=self.t)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLambda]:
    fake = FakeLambda(KEY)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def fake(server: FakeLambda, clock: FakeTime) -> FakeLambda:
    server.reset(clock=clock.now)
    return server


def make(fake: FakeLambda, clock: FakeTime, key: str = KEY, url: str | None = None, **options) -> LambdaCloud:
    """An adapter on the manual clock; the 1 request/s pacing is off unless a test asks for it (see below)."""
    policy = LambdaConfig(**options.pop("policy", {}))
    options.setdefault("request_interval", 0.0)
    return LambdaCloud("lambda", policy, key, url or f"{fake.url}/api/v1", clock=clock.monotonic,
                       sleep=clock.sleep, **options)


@pytest.fixture
def cloud(fake: FakeLambda, clock: FakeTime) -> Iterator[LambdaCloud]:
    adapter = make(fake, clock)
    yield adapter
    adapter.close()


def spec(booking: int = 7, nonce: str = "ab12", **kw) -> LaunchSpec:
    return LaunchSpec(booking, instance_tag(booking, nonce), **kw)


def h100_offer(cloud: LambdaCloud, region: str = "us-west-1"):
    return next(o for o in cloud.offers(OfferRequest("h100", 8)) if o.region == region)


# -- offers -----------------------------------------------------------------------------------------------
def test_offers_price_per_gpu_and_availability(fake: FakeLambda, cloud: LambdaCloud) -> None:
    fake.set_capacity("gpu_8x_h100_sxm5", ["us-east-1"])
    offers = cloud.offers(OfferRequest("h100", 8))
    assert {o.region: o.available for o in offers} == {"us-east-1": True, "us-south-1": False,
                                                       "us-west-1": False}
    assert {(o.price_per_gpu_hour, o.currency, o.ref, o.count) for o in offers} == {
        (Decimal("3.99"), "USD", "gpu_8x_h100_sxm5", 8)}


def test_offers_match_gpu_and_count_only(cloud: LambdaCloud) -> None:
    assert [o.ref for o in cloud.offers(OfferRequest("a100-80g", 8, region="us-west-1"))] == [
        "gpu_8x_a100_80gb_sxm4"]
    assert cloud.offers(OfferRequest("a100-80g", 1)) == []
    assert cloud.offers(OfferRequest("rtx4090", 1)) == []


def test_offers_honour_policy_regions_request_region_and_spot(fake: FakeLambda, clock: FakeTime) -> None:
    adapter = make(fake, clock, policy={"regions": ["us-west-1", "eu-central-1"]})
    assert [o.region for o in adapter.offers(OfferRequest("a10", 1))] == ["us-west-1", "eu-central-1"]
    assert [o.region for o in adapter.offers(OfferRequest("a10", 1, region="eu-central-1"))] == [
        "eu-central-1"]
    assert adapter.offers(OfferRequest("a10", 1, spot=True)) == []
    assert adapter.offers(OfferRequest("a10", 1, region="us-east-1")) == []


def test_offers_ignore_unexpected_extra_fields(fake: FakeLambda, cloud: LambdaCloud) -> None:
    fake.inject("extra_fields", path="instance-types")
    assert len(cloud.offers(OfferRequest("v100", 8))) == 3


def test_instance_types_are_read_once_per_probe_round(fake: FakeLambda, cloud: LambdaCloud,
                                                      clock: FakeTime) -> None:
    shapes = [OfferRequest("h100", 8), OfferRequest("a100-80g", 8), OfferRequest("a10", 1), OfferRequest("v100", 8)]
    with ThreadPoolExecutor(4) as pool:  # one round probes a booking's shapes at the same time
        offered = list(pool.map(cloud.offers, shapes))
    assert all(offered) and len(listings(fake)) == 1
    clock.t += 6  # the next round (after CATALOG_TTL) reads the listing again
    cloud.offers(OfferRequest("h100", 8))
    assert len(listings(fake)) == 2


def listings(fake: FakeLambda) -> list:
    return [r for r in fake.requests if r.path.endswith("/instance-types")]


# -- launch, describe, terminate, list ----------------------------------------------------------------------
def test_launch_boot_terminate_twice(fake: FakeLambda, cloud: LambdaCloud, clock: FakeTime) -> None:
    launched = cloud.launch(h100_offer(cloud), spec(start_command="python train.py"))
    assert (launched.status, launched.ready, launched.gpu, launched.count) == ("booting", False, "h100", 8)
    sent = fake.instances[launched.instance_id]
    assert sent["user_data"].startswith("#cloud-config\n")  # runs "python train.py" once (test_startup_machines)
    assert sent["tags"] == [{"key": "gpubot-booking", "value": "7"}]
    assert sent["ssh_key_names"] == ["gpubot"]
    booting = cloud.describe(launched)
    assert (booting.status, booting.ready, booting.ssh) == ("booting", False, None)
    clock.t += 1
    assert not cloud.describe(launched).ready
    clock.t += 1
    ready = cloud.describe(launched)
    assert (ready.status, ready.ssh, ready.region) == ("active", f"ssh ubuntu@{sent['ip']}", "us-west-1")
    clock.t += 3600
    cloud.terminate(ready)
    cloud.terminate(ready)
    assert cloud.describe(ready).status == "terminated"
    assert fake.billed_seconds(launched.instance_id) == 3602


def test_list_owned_keeps_only_live_tagged_instances(fake: FakeLambda, cloud: LambdaCloud) -> None:
    ours = cloud.launch(h100_offer(cloud), spec(1, "aa"))
    gone = cloud.launch(h100_offer(cloud), spec(2, "bb"))
    cloud.launch(h100_offer(cloud), LaunchSpec(3, "someone-elses-box"))
    cloud.terminate(gone)
    assert [(i.instance_id, i.name) for i in cloud.list_owned()] == [(ours.instance_id, "gpubot-1-aa")]


def test_a_preempted_instance_is_reported_preempted_and_stays_listed_until_terminated(
        fake: FakeLambda, cloud: LambdaCloud, clock: FakeTime) -> None:
    launched = cloud.launch(h100_offer(cloud), spec(4, "pp"))
    fake.activate(launched.instance_id)
    clock.t += 1800
    fake.preempt(launched.instance_id)
    clock.t += 600
    seen = cloud.describe(launched)
    assert (seen.status, seen.ready, seen.stopped_at) == ("preempted", False, None)  # Lambda gives no time
    assert [(i.name, i.status) for i in cloud.list_owned()] == [("gpubot-4-pp", "preempted")]
    cloud.terminate(seen)
    cloud.terminate(seen)
    assert cloud.list_owned() == []
    assert fake.billed_seconds(launched.instance_id) == 1800


def test_back_to_back_launches_wait_twelve_seconds(cloud: LambdaCloud, clock: FakeTime) -> None:
    offer = h100_offer(cloud)
    cloud.launch(offer, spec(1, "a"))
    clock.t += 5
    cloud.launch(offer, spec(2, "b"))
    assert clock.sleeps == [7.0]


def test_a_launch_429_is_retried_at_the_next_launch_turn(fake: FakeLambda, clock: FakeTime,
                                                         cloud: LambdaCloud) -> None:
    other = make(fake, clock)  # another process with its own pacer: Lambda's own limit answers 429
    cloud.launch(h100_offer(cloud), spec(1, "a"))
    other.launch(h100_offer(other), spec(2, "b"))
    launches = [r for r in fake.requests if r.path.endswith("launch")]
    assert len(launches) == 3 and sum(clock.sleeps) == pytest.approx(12.0)  # the retry waited for its launch turn


def test_a_launch_still_refused_becomes_rate_limited_with_the_launch_interval(fake: FakeLambda,
                                                                             cloud: LambdaCloud) -> None:
    fake.inject("ratelimit", path="launch", times=3)
    with pytest.raises(RateLimited) as caught:
        cloud.launch(h100_offer(cloud), spec(2, "b"))
    assert caught.value.retry_after == 12.0


def test_lost_launch_response_raises_and_reconcile_finds_it(fake: FakeLambda, cloud: LambdaCloud) -> None:
    fake.inject("lost_response", path="launch")
    with pytest.raises(ProviderError):
        cloud.launch(h100_offer(cloud), spec(9, "zz"))
    assert [i.name for i in cloud.list_owned()] == ["gpubot-9-zz"]
    assert len([r for r in fake.requests if r.path.endswith("launch")]) == 1


# -- 404: gone, or a wrong route ----------------------------------------------------------------------------
def test_an_instance_lambda_does_not_know_is_gone(fake: FakeLambda, cloud: LambdaCloud) -> None:
    launched = cloud.launch(h100_offer(cloud), spec())
    fake.instances.pop(launched.instance_id)  # Lambda answers global/object-does-not-exist for it now
    assert cloud.describe(launched).status == "terminated"
    cloud.terminate(launched)


def test_a_wrong_route_is_an_error_never_gone(fake: FakeLambda, clock: FakeTime) -> None:
    live = make(fake, clock)
    launched = live.launch(h100_offer(live), spec())
    misrouted = make(fake, clock, url=f"{fake.url}/api/v2")  # a base URL Lambda does not serve
    for call in (misrouted.describe, misrouted.terminate):
        with pytest.raises(InvalidRequest, match="wrong route"):
            call(launched)
    assert fake.instances[launched.instance_id]["status"] == "booting"
    assert {r.path for r in fake.requests if "/api/v2/" in r.path} == {
        f"/api/v2/instances/{launched.instance_id}", "/api/v2/instance-operations/terminate"}


# -- pacing (one process; replicas sharing a database: tests/integration/scheduling/test_pacing.py) ---------
def test_every_call_waits_its_turn_and_a_launch_its_launch_turn(fake: FakeLambda, clock: FakeTime) -> None:
    paced = make(fake, clock, request_interval=1.0)
    offer = h100_offer(paced)
    launched = paced.launch(offer, spec(1, "a"))
    paced.describe(launched)
    paced.launch(offer, spec(2, "b"))
    # listing at t, launch at t+1, describe at t+2, the second launch at t+13: 12 s after the first
    assert clock.sleeps == [1.0, 1.0, 11.0]
    first, second = (run.launched_at for run in fake.runs.values())
    assert (second - first).total_seconds() == 12.0


# -- vendor errors ------------------------------------------------------------------------------------------
def test_no_capacity_is_scoped_to_the_region(fake: FakeLambda, cloud: LambdaCloud) -> None:
    offer = h100_offer(cloud)
    fake.set_capacity("gpu_8x_h100_sxm5", [])
    with pytest.raises(NoCapacity) as caught:
        cloud.launch(offer, spec())
    assert (caught.value.scope, caught.value.region) == ("region", "us-west-1")


def test_quota_exceeded(fake: FakeLambda, cloud: LambdaCloud) -> None:
    fake.quota_exceeded = True
    with pytest.raises(QuotaExceeded):
        cloud.launch(h100_offer(cloud), spec())


def test_wrong_key_and_inactive_account_are_auth_failures(fake: FakeLambda, clock: FakeTime) -> None:
    with pytest.raises(AuthFailed):
        make(fake, clock, key="wrong").offers(OfferRequest("h100", 8))
    fake.account_inactive = True
    with pytest.raises(AuthFailed):
        make(fake, clock).list_owned()


def test_invalid_parameters_and_unknown_ssh_key(fake: FakeLambda, clock: FakeTime,
                                                cloud: LambdaCloud) -> None:
    with pytest.raises(InvalidRequest, match="invalid-parameters"):
        cloud.launch(h100_offer(cloud), LaunchSpec(1, "gpubot-1-" + "x" * 64))
    clock.t += 12  # the launch window is account-wide: a second adapter would get 429
    adapter = make(fake, clock, policy={"ssh_key_name": "nobody"})
    with pytest.raises(InvalidRequest, match="object-does-not-exist"):
        adapter.launch(h100_offer(adapter), spec())


def test_unknown_error_code_is_transient_and_key_not_logged(fake: FakeLambda, cloud: LambdaCloud,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    body = {"error": {"code": "provider/internal-unavailable", "message": "Try again shortly"}}
    fake.route("GET", r"/api/v1/instances", lambda r: (409, body))
    fake.routes.insert(0, fake.routes.pop())
    with pytest.raises(Transient, match="409"):
        cloud.list_owned()
    assert "provider/internal-unavailable" in caplog.text and KEY not in caplog.text


# -- transport faults ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("retry_after", [None, "1"])
def test_429_once_is_retried(fake: FakeLambda, cloud: LambdaCloud, retry_after: str | None) -> None:
    fake.inject("ratelimit", path="instance-types", retry_after=retry_after)
    assert cloud.offers(OfferRequest("a10", 1))


def test_persistent_429_is_rate_limited(fake: FakeLambda, cloud: LambdaCloud) -> None:
    fake.inject("ratelimit", path="instance-types", times=3)
    with pytest.raises(RateLimited):
        cloud.offers(OfferRequest("a10", 1))


def test_long_retry_after_is_not_waited_for(fake: FakeLambda, cloud: LambdaCloud) -> None:
    fake.inject("ratelimit", path="instance-types", retry_after="30")
    with pytest.raises(RateLimited) as caught:
        cloud.offers(OfferRequest("a10", 1))
    assert caught.value.retry_after == 30.0 and len(fake.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_retried_then_transient(fake: FakeLambda, cloud: LambdaCloud, clock: FakeTime,
                                             status: int) -> None:
    fake.inject("status", path="instance-types", status=status)
    assert cloud.offers(OfferRequest("a10", 1))
    clock.t += 60  # past the probe round: the next offers() reads the listing again
    fake.inject("status", path="instance-types", status=status, times=3)
    with pytest.raises(Transient, match=str(status)):
        cloud.offers(OfferRequest("a10", 1))


def test_read_timeout_is_transient(fake: FakeLambda, clock: FakeTime) -> None:
    adapter = make(fake, clock, timeout=0.2)
    fake.inject("timeout", path="instances", delay=1.0, times=3)
    with pytest.raises(Transient, match="Timeout"):
        adapter.list_owned()


def test_connection_refused_is_transient(fake: FakeLambda, clock: FakeTime) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(Transient, match="connection failed"):
        make(fake, clock, url=f"http://127.0.0.1:{port}/api/v1").offers(OfferRequest("a10", 1))


def test_malformed_json_is_transient(fake: FakeLambda, cloud: LambdaCloud) -> None:
    fake.inject("malformed", path="instances")
    with pytest.raises(Transient):
        cloud.list_owned()
