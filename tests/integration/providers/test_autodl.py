"""AutoDL adapter against the faithful ESD fake on 127.0.0.1 (no network, instant retries)."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.domain.errors import AuthFailed, InvalidRequest, NoCapacity, RateLimited, Transient
from gpubot.domain.model import Instance, OfferRequest
from gpubot.domain.ports import LaunchSpec, Provider
from gpubot.providers.autodl.adapter import AutoDL
from gpubot.providers.autodl.config import AutoDLConfig

from tests.fakes.autodl_api import FakeAutoDL

TOKEN = "test-token"
CREATE = r"/api/v1/dev/deployment$"
STOCK = r"/gpu_stock$"


class Clock:
    """A hand-cranked clock for the fake's run records."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fake(clock: Clock):
    server = FakeAutoDL(TOKEN, clock=clock, create_time=timedelta(seconds=40), start_time=timedelta(seconds=15))
    server.set_stock("westDC2", "RTX 4090", 8, 100)
    server.set_stock("westDC2", "H800", 0, 16)
    server.set_stock("westDC2", "RTX 5090", 4, 4)
    server.set_stock("beijingDC1", "RTX 4090", 1, 10)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def sleeps() -> list[float]:
    return []


def make(url: str, sleeps: list[float], token: str = TOKEN, **policy: object) -> AutoDL:
    settings = {"kind": "autodl", "currency": "CNY", "regions": ["westDC2", "beijingDC1"], **policy}
    return AutoDL("autodl", AutoDLConfig(**settings), token, url, sleep=sleeps.append)


@pytest.fixture
def autodl(fake: FakeAutoDL, sleeps: list[float]) -> AutoDL:
    return make(fake.url, sleeps)


def launch(autodl: AutoDL, gpu: str = "rtx4090", count: int = 2, name: str = "gpubot-7-abc") -> Instance:
    offer = next(o for o in autodl.offers(OfferRequest(gpu, count)) if o.available)
    return autodl.launch(offer, LaunchSpec(7, name))


# -- offers -------------------------------------------------------------------------------------------
def test_is_a_provider(autodl: AutoDL) -> None:
    assert isinstance(autodl, Provider) and autodl.kind == "autodl"


def test_offers_are_priced_in_cny_and_available_from_stock(autodl: AutoDL, fake: FakeAutoDL) -> None:
    offers = autodl.offers(OfferRequest("rtx4090", 2))
    assert [(o.region, o.available, o.ref) for o in offers] == [
        ("westDC2", True, "RTX 4090"), ("beijingDC1", False, "RTX 4090")]
    assert {(o.price_per_gpu_hour, o.currency, o.count) for o in offers} == {(Decimal("1.98"), "CNY", 2)}
    sent = fake.requests[0]
    assert sent.headers["authorization"] == TOKEN and sent.json() == {"region_sign": "westDC2"}


def test_policy_price_overrides_the_default_table(fake: FakeAutoDL, sleeps: list[float]) -> None:
    autodl = make(fake.url, sleeps, prices={"rtx5090": Decimal("2.50")})
    [offer] = autodl.offers(OfferRequest("rtx5090", 1, region="westDC2"))
    assert offer.price_per_gpu_hour == Decimal("2.50") and offer.ref == "RTX 5090"


def test_unpriced_or_unsold_gpu_gives_no_offers(autodl: AutoDL, fake: FakeAutoDL) -> None:
    assert autodl.offers(OfferRequest("rtx5090", 1)) == []  # in stock, but no price known
    assert autodl.offers(OfferRequest("t4", 1)) == []
    assert fake.requests == []


def test_request_region_limits_the_probe(autodl: AutoDL, fake: FakeAutoDL) -> None:
    offers = autodl.offers(OfferRequest("rtx4090", 1, region="beijingDC1"))
    assert [o.region for o in offers] == ["beijingDC1"]
    assert len(fake.requests) == 1


def test_no_idle_stock_means_unavailable(autodl: AutoDL) -> None:
    [offer] = autodl.offers(OfferRequest("h800", 1))
    assert offer.available is False and offer.price_per_gpu_hour == Decimal("8.88")


# -- lifecycle ----------------------------------------------------------------------------------------
def test_launch_describe_until_ready_then_terminate_twice(autodl: AutoDL, fake: FakeAutoDL,
                                                          clock: Clock) -> None:
    instance = launch(autodl)
    assert (instance.name, instance.ready, instance.region, instance.gpu, instance.count) == (
        "gpubot-7-abc", False, "westDC2", "rtx4090", 2)
    assert fake.idle("westDC2", "RTX 4090") == 6
    first = autodl.describe(instance)
    assert (first.status, first.ready, first.ssh) == ("creating", False, None)
    clock.now += timedelta(minutes=1)
    ready = autodl.describe(first)
    assert ready.ready and ready.status == "running" and ready.ssh.startswith("ssh -p ")
    assert ready.extra["price_per_hour_cny"] == Decimal("3.96")
    clock.now += timedelta(hours=2)
    autodl.terminate(ready)
    autodl.terminate(ready)
    assert fake.idle("westDC2", "RTX 4090") == 8
    assert autodl.describe(ready).status == "terminated"
    run = fake.runs[instance.instance_id]
    assert run.runtime(clock.now) == timedelta(hours=2, minutes=1) and run.deleted_at == clock.now


def test_launch_sends_a_container_deployment(autodl: AutoDL, fake: FakeAutoDL) -> None:
    launch(autodl)
    body = next(r for r in fake.requests if r.method == "POST" and r.path == "/api/v1/dev/deployment").json()
    template = body["container_template"]
    assert body["name"] == "gpubot-7-abc" and body["deployment_type"] == "Container"
    assert (template["dc_list"], template["gpu_name_set"], template["gpu_num"]) == (
        ["westDC2"], ["RTX 4090"], 2)
    assert (template["cuda_v_from"], template["image_uuid"]) == (118, "base-image-l2t43iu6uk")
    assert template["cmd"].splitlines()[-1] == "exec sleep infinity"  # the container lives as long as cmd
    assert (template["price_from"], template["price_to"]) == (0, 5940)  # ¥1.98 × 2 × 1.5, in CNY × 1000


def test_launch_uses_policy_image_and_start_command(fake: FakeAutoDL, sleeps: list[float]) -> None:
    autodl = make(fake.url, sleeps, image="image-db8346e037", start_command="python serve.py")
    launch(autodl)
    template = fake.deployments.popitem()[1].body["container_template"]
    assert template["image_uuid"] == "image-db8346e037"
    assert "\npython serve.py\n" in template["cmd"] and template["cmd"].endswith("\nexec sleep infinity\n")


def test_list_owned_keeps_live_gpubot_deployments(autodl: AutoDL) -> None:
    mine = launch(autodl, name="gpubot-7-abc")
    launch(autodl, name="someone-elses-job")
    gone = launch(autodl, name="gpubot-8-def")
    autodl.terminate(gone)
    owned = autodl.list_owned()
    assert [(i.instance_id, i.name, i.region, i.gpu, i.count) for i in owned] == [
        (mine.instance_id, "gpubot-7-abc", "westDC2", "rtx4090", 2)]


def test_terminate_and_describe_of_an_unknown_deployment(autodl: AutoDL) -> None:
    ghost = Instance("autodl", "deadbeef", "gpubot-1-x")
    autodl.terminate(ghost)
    assert autodl.describe(ghost).status == "terminated"


def test_telemetry_is_empty(autodl: AutoDL) -> None:
    assert autodl.telemetry(Instance("autodl", "x", "gpubot-1-x")) == []


# -- vendor errors ------------------------------------------------------------------------------------
def test_create_failure_for_lack_of_stock_is_no_capacity(autodl: AutoDL, fake: FakeAutoDL) -> None:
    offer = autodl.offers(OfferRequest("rtx4090", 2))[0]
    fake.set_stock("westDC2", "RTX 4090", 1, 100)  # taken between probe and launch
    with pytest.raises(NoCapacity) as caught:
        autodl.launch(offer, LaunchSpec(7, "gpubot-7-abc"))
    assert (caught.value.scope, caught.value.region) == ("region", "westDC2")
    assert "库存不足" in str(caught.value)


@pytest.mark.parametrize(("code", "msg", "error"), [
    ("ResourceUnavailable", "GPU资源不足", NoCapacity),
    ("Fail", "GPU sold out in this region", NoCapacity),
    ("InvalidParameter", "参数错误: gpu_num", InvalidRequest),
    ("PermissionDenied", "无当前资源访问权限", AuthFailed),
    ("Failed", "无当前资源访问权限", AuthFailed),
    ("InternalError", "服务繁忙，请稍后再试", Transient),
])
def test_create_failures_map_to_our_errors(autodl: AutoDL, fake: FakeAutoDL, code: str, msg: str,
                                           error: type) -> None:
    fake.fail_next_create(code, msg)
    with pytest.raises(error):
        launch(autodl)


@pytest.mark.parametrize("status", [200, 401, 403])
def test_wrong_token_is_auth_failed(fake: FakeAutoDL, sleeps: list[float], status: int) -> None:
    fake.auth_status = status
    with pytest.raises(AuthFailed):
        make(fake.url, sleeps, token="Bearer " + TOKEN).offers(OfferRequest("rtx4090", 1))


# -- transport faults (VendorHttp owns the retries) ----------------------------------------------------
def test_429_with_retry_after_waits_as_told(autodl: AutoDL, fake: FakeAutoDL, sleeps: list[float]) -> None:
    fake.inject("ratelimit", path=STOCK, retry_after="2")
    assert autodl.offers(OfferRequest("rtx4090", 1, region="westDC2"))
    assert sleeps == [2.0]


def test_429_without_retry_after_backs_off(autodl: AutoDL, fake: FakeAutoDL, sleeps: list[float]) -> None:
    fake.inject("ratelimit", path=STOCK)
    assert autodl.offers(OfferRequest("rtx4090", 1, region="westDC2"))
    assert len(sleeps) == 1 and 0 < sleeps[0] <= 2.5


def test_persistent_429_is_rate_limited(autodl: AutoDL, fake: FakeAutoDL) -> None:
    fake.inject("ratelimit", path=STOCK, retry_after="1", times=3)
    with pytest.raises(RateLimited) as caught:
        autodl.offers(OfferRequest("rtx4090", 1, region="westDC2"))
    assert caught.value.retry_after == 1.0 and len(fake.requests) == 3


def test_long_retry_after_is_not_slept_on(autodl: AutoDL, fake: FakeAutoDL, sleeps: list[float]) -> None:
    fake.inject("ratelimit", path=STOCK, retry_after="30")
    with pytest.raises(RateLimited) as caught:
        autodl.offers(OfferRequest("rtx4090", 1, region="westDC2"))
    assert caught.value.retry_after == 30.0 and sleeps == []


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_retried_then_transient(autodl: AutoDL, fake: FakeAutoDL, status: int) -> None:
    fake.inject("status", path=STOCK, status=status)
    assert autodl.offers(OfferRequest("rtx4090", 1, region="westDC2"))
    fake.inject("status", path=STOCK, status=status, times=3)
    with pytest.raises(Transient):
        autodl.offers(OfferRequest("rtx4090", 1, region="westDC2"))


def test_launch_is_not_blindly_repeated_after_a_500(autodl: AutoDL, fake: FakeAutoDL) -> None:
    fake.inject("status", path=CREATE, method="POST", status=500)
    with pytest.raises(Transient):
        launch(autodl)
    assert sum(r.path == "/api/v1/dev/deployment" for r in fake.requests) == 1


def test_launch_is_repeated_after_a_503(autodl: AutoDL, fake: FakeAutoDL) -> None:
    fake.inject("status", path=CREATE, method="POST", status=503)
    launch(autodl)
    assert len(fake.deployments) == 1


def test_read_timeout_is_retried_then_transient(fake: FakeAutoDL, sleeps: list[float]) -> None:
    policy = AutoDLConfig()
    autodl = AutoDL("autodl", policy, TOKEN, fake.url, sleep=sleeps.append, timeout=0.2)
    fake.inject("timeout", path=STOCK, delay=0.5)
    assert autodl.offers(OfferRequest("rtx4090", 1))
    fake.inject("timeout", path=STOCK, delay=0.5, times=3)
    with pytest.raises(Transient, match="ReadTimeout"):
        autodl.offers(OfferRequest("rtx4090", 1))


def test_connection_refused_is_transient(sleeps: list[float]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    autodl = make(f"http://127.0.0.1:{port}", sleeps)
    with pytest.raises(Transient, match="connection failed"):
        autodl.offers(OfferRequest("rtx4090", 1))
    assert len(sleeps) == 2


def test_malformed_json_is_transient(autodl: AutoDL, fake: FakeAutoDL) -> None:
    fake.inject("malformed", path=STOCK)
    with pytest.raises(Transient, match="unreadable"):
        autodl.offers(OfferRequest("rtx4090", 1))


def test_extra_fields_are_ignored(autodl: AutoDL, fake: FakeAutoDL, clock: Clock) -> None:
    fake.inject("extra_fields", times=50)
    instance = launch(autodl)
    clock.now += timedelta(minutes=1)
    assert autodl.describe(instance).ready


def test_lost_launch_response_is_found_by_list_owned(autodl: AutoDL, fake: FakeAutoDL) -> None:
    fake.inject("lost_response", path=CREATE, method="POST")
    with pytest.raises(Transient):
        launch(autodl)
    [found] = autodl.list_owned()
    assert found.name == "gpubot-7-abc" and found.instance_id in fake.deployments
    again = launch(autodl)  # a retried launch adopts it instead of starting a second one
    assert again.instance_id == found.instance_id and len(fake.deployments) == 1


def test_a_cuda_floor_goes_to_gpu_stock_and_to_the_deployment(autodl: AutoDL, fake: FakeAutoDL) -> None:
    offers = autodl.offers(OfferRequest("rtx4090", 2, region="westDC2", cuda="12.1"))
    stock = [r.json() for r in fake.requests if r.path.endswith("/gpu_stock")]
    assert stock == [{"region_sign": "westDC2", "cuda_v_from": 121}]
    assert {o.max_cuda for o in offers} == {"13.0"}
    autodl.launch(offers[0], LaunchSpec(7, "gpubot-7-abc", cuda="12.1", image="image-cu121"))
    template = fake.deployments.popitem()[1].body["container_template"]
    assert (template["cuda_v_from"], template["cuda_v_to"], template["image_uuid"]) == (121, 130, "image-cu121")
