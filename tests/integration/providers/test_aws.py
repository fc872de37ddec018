"""AWS EC2 adapter against moto. Capacity and other vendor errors are injected at the one documented seam,
botocore.client.BaseClient._make_api_call (moto docs: patching_other_services), calling through otherwise."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from unittest.mock import patch
from urllib.parse import parse_qs

import boto3
import botocore.client
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from gpubot.domain.errors import (
    AuthFailed,
    ImageRefused,
    InvalidRequest,
    NoCapacity,
    QuotaExceeded,
    RateLimited,
    Transient,
)
from gpubot.domain.model import Instance, OfferRequest
from gpubot.domain.ports import LaunchSpec, Provider
from gpubot.providers.aws.adapter import DLAMI_NAME, AwsEc2
from gpubot.providers.aws.config import AwsConfig
from gpubot.providers.aws.wire import RETRY_ATTEMPTS

REGION = "us-east-1"
ORIGINAL_CALL = botocore.client.BaseClient._make_api_call


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_SECURITY_TOKEN": "testing", "AWS_SESSION_TOKEN": "testing",
                       "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2"):
        monkeypatch.delenv(key, raising=False)
    from moto import mock_aws  # here, not at collection (tests/conftest.py, VENDOR_GROUPS)

    with mock_aws():
        yield


def make(**policy: Any) -> AwsEc2:
    settings = {"kind": "aws", "regions": [REGION], "image": "ami-12c6146b", **policy}
    return AwsEc2("aws", AwsConfig(**settings))


@pytest.fixture
def ec2(aws: None) -> AwsEc2:
    return make()


def count_instances(region: str = REGION) -> int:
    """Instances moto holds that are not terminated."""
    answer = boto3.client("ec2", region_name=region).describe_instances(
        Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}])
    return sum(len(r["Instances"]) for r in answer["Reservations"])


def launch(ec2: AwsEc2, gpu: str = "a10g", count: int = 4, name: str = "gpubot-5-x1", spot: bool = False,
           start: str | None = None) -> Instance:
    offer = ec2.offers(OfferRequest(gpu, count, spot=spot))[0]
    return ec2.launch(offer, LaunchSpec(5, name, start_command=start))


def faulty(fault: Callable[[str, dict], None]) -> Any:
    """Patch the botocore seam: run `fault(operation, params)` first (it may raise), then the original."""
    def call(self: Any, operation: str, params: dict) -> Any:
        fault(operation, params)
        return ORIGINAL_CALL(self, operation, params)
    return patch("botocore.client.BaseClient._make_api_call", new=call)


def sold_out(code: str, types: set[str], message: str = "", zones: set[str] | None = None,
             seen: list[dict] | None = None) -> Any:
    """RunInstances of one of `types` (in one of `zones`, default any) fails with `code`, as AWS answers (ICE with
    HTTP 500); `seen` collects the parameters of every RunInstances."""
    def fault(operation: str, params: dict) -> None:
        if operation != "RunInstances":
            return
        if seen is not None:
            seen.append(params)
        zone = params.get("Placement", {}).get("AvailabilityZone", "")
        if params.get("InstanceType") in types and (zones is None or zone in zones):
            raise ClientError({"Error": {"Code": code, "Message": message or f"{code} ({zone})"},
                               "ResponseMetadata": {"HTTPStatusCode": 500}}, operation)
    return faulty(fault)


def zones_of(seen: list[dict]) -> list[str]:
    return [params["Placement"]["AvailabilityZone"] for params in seen]


# -- offers -------------------------------------------------------------------------------------------
def test_is_a_provider(ec2: AwsEc2) -> None:
    assert isinstance(ec2, Provider) and ec2.kind == "aws"


def test_offers_price_per_gpu_in_usd(ec2: AwsEc2) -> None:
    [offer] = ec2.offers(OfferRequest("h100", 8))
    assert (offer.region, offer.ref, offer.currency, offer.available) == (REGION, "p5.48xlarge", "USD", True)
    assert offer.price_per_gpu_hour == Decimal("6.88")


def test_offers_drop_regions_that_do_not_sell_the_type(aws: None) -> None:
    ec2 = make(regions=["us-east-1", "eu-west-1", "af-south-1"])
    assert [o.region for o in ec2.offers(OfferRequest("h100", 8))] == ["us-east-1"]
    assert [o.region for o in ec2.offers(OfferRequest("a100", 8))] == ["us-east-1", "eu-west-1"]


def test_offers_for_unknown_shapes_are_empty(ec2: AwsEc2) -> None:
    assert ec2.offers(OfferRequest("h100", 3)) == []
    assert ec2.offers(OfferRequest("rtx4090", 1)) == []


def test_policy_price_overrides_table(aws: None) -> None:
    [offer] = make(prices={"t4": Decimal("0.30")}).offers(OfferRequest("t4", 1))
    assert offer.price_per_gpu_hour == Decimal("0.30")


# -- lifecycle ----------------------------------------------------------------------------------------
def test_launch_tags_and_describes_ready(ec2: AwsEc2) -> None:
    instance = launch(ec2, start="python serve.py")
    raw = boto3.client("ec2", region_name=REGION).describe_instances(InstanceIds=[instance.instance_id])
    [[raw]] = [r["Instances"] for r in raw["Reservations"]]
    assert {t["Key"]: t["Value"] for t in raw["Tags"]} == {"Name": "gpubot-5-x1", "gpubot-booking": "5"}
    assert (raw["InstanceType"], raw["ImageId"]) == ("g5.12xlarge", "ami-12c6146b")
    described = ec2.describe(instance)
    assert (described.name, described.gpu, described.count, described.status) == (
        "gpubot-5-x1", "a10g", 4, "running")
    assert described.ready and described.ssh == f"ssh ubuntu@{raw['PublicIpAddress']}"


def test_launch_sends_client_token_and_same_spec_twice_makes_one_instance(ec2: AwsEc2) -> None:
    seen: list[dict] = []
    with faulty(lambda op, params: seen.append(params) if op == "RunInstances" else None):
        first = launch(ec2)
        second = launch(ec2)
    assert first.instance_id == second.instance_id and count_instances() == 1
    assert [p["ClientToken"] for p in seen] == ["gpubot-5-x1:g5.12xlarge:us-east-1a"]
    assert "UserData" not in seen[0] and "InstanceMarketOptions" not in seen[0]


def test_spot_launch_asks_for_the_spot_market(ec2: AwsEc2) -> None:
    seen: list[dict] = []
    with faulty(lambda op, params: seen.append(params) if op == "RunInstances" else None):
        launch(ec2, spot=True, start="python serve.py")
    assert seen[0]["InstanceMarketOptions"]["MarketType"] == "spot"
    assert seen[0]["ClientToken"].endswith(":spot")


def spot_interrupted(instance_id: str) -> Any:
    """EC2 took the spot instance back: DescribeInstances shows it terminated with the interruption's StateReason
    (AWS EC2 user guide, "Find interrupted Spot Instances"); moto can only terminate it as its user would."""
    def call(self: Any, operation: str, params: dict) -> Any:
        answer = ORIGINAL_CALL(self, operation, params)
        if operation == "DescribeInstances":
            for raw in (i for r in answer["Reservations"] for i in r["Instances"] if i["InstanceId"] == instance_id):
                raw["StateReason"] = {"Code": "Server.SpotInstanceTermination",
                                      "Message": "Server.SpotInstanceTermination: Spot instance termination"}
                # [I] the time as EC2 writes it in "User initiated (…)"
                raw["StateTransitionReason"] = "Service initiated (2026-11-30 12:00:00 GMT)"
        return answer
    return patch("botocore.client.BaseClient._make_api_call", new=call)


def test_an_interrupted_spot_instance_is_preempted_and_still_listed(ec2: AwsEc2) -> None:
    taken = launch(ec2, spot=True, name="gpubot-5-sp")
    ended = launch(ec2, spot=True, name="gpubot-6-ok")
    client = boto3.client("ec2", region_name=REGION)
    client.terminate_instances(InstanceIds=[taken.instance_id, ended.instance_id])
    with spot_interrupted(taken.instance_id):
        seen = ec2.describe(taken)
        listed = ec2.list_owned()
        ec2.terminate(seen)  # safe on what EC2 already terminated
    assert (seen.status, seen.ready, seen.ssh) == ("preempted", False, None)
    assert seen.stopped_at == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert seen.extra["lifecycle"] == "spot"
    assert [(i.name, i.status) for i in listed] == [("gpubot-5-sp", "preempted")]  # a user-ended one is gone
    assert ec2.describe(ended).status == "terminated"


def test_terminate_twice_and_describe_gone(ec2: AwsEc2) -> None:
    instance = launch(ec2)
    ec2.terminate(instance)
    ec2.terminate(instance)
    assert ec2.describe(instance).status == "terminated" and ec2.list_owned() == []
    ghost = Instance("aws", "i-0123456789abcdef0", "gpubot-1-x", region=REGION)
    ec2.terminate(ghost)
    assert ec2.describe(ghost).status == "terminated"


def test_list_owned_finds_a_lost_launch_by_tag(ec2: AwsEc2) -> None:
    def lose_answer(self: Any, operation: str, params: dict) -> Any:
        answer = ORIGINAL_CALL(self, operation, params)
        if operation == "RunInstances":
            raise ReadTimeoutError(endpoint_url="https://ec2.us-east-1.amazonaws.com")
        return answer
    with patch("botocore.client.BaseClient._make_api_call", new=lose_answer), pytest.raises(Transient):
        launch(ec2)
    boto3.client("ec2", region_name=REGION).run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1,
                                                          TagSpecifications=[{"ResourceType": "instance",
                                                          "Tags": [{"Key": "Name", "Value": "web-1"}]}])
    [found] = ec2.list_owned()
    assert (found.name, found.gpu, found.count) == ("gpubot-5-x1", "a10g", 4)
    assert launch(ec2).instance_id == found.instance_id and count_instances() == 2


def test_default_image_is_the_newest_deep_learning_ami(aws: None) -> None:
    client = boto3.client("ec2", region_name=REGION)
    for day in ("20261001", "20261101"):
        client.register_image(Name=DLAMI_NAME.replace("*", day), RootDeviceName="/dev/sda1",
                              Architecture="x86_64")
    newest = client.describe_images(Filters=[{"Name": "name", "Values": ["*20261101"]}])["Images"][0]
    instance = launch(make(image=None))
    raw = client.describe_instances(InstanceIds=[instance.instance_id])["Reservations"][0]["Instances"][0]
    assert raw["ImageId"] == newest["ImageId"]


def test_missing_default_image_is_invalid_request(aws: None) -> None:
    with pytest.raises(InvalidRequest, match="no AMI"):
        launch(make(image=None))


def test_telemetry_is_empty(ec2: AwsEc2) -> None:
    assert ec2.telemetry(Instance("aws", "i-1", "gpubot-1-x")) == []


# -- injected vendor errors ----------------------------------------------------------------------------
@pytest.mark.parametrize("code", ["InsufficientInstanceCapacity", "InsufficientHostCapacity",
                                  "InsufficientReservedInstanceCapacity", "InsufficientCapacity",
                                  "UnfulfillableCapacity", "Unsupported", "InsufficientFreeAddressesInSubnet"])
def test_a_capacity_error_in_every_zone_blocks_the_region(ec2: AwsEc2, code: str) -> None:
    seen: list[dict] = []
    with sold_out(code, {"g5.12xlarge"}, seen=seen), pytest.raises(NoCapacity) as caught:
        launch(ec2)
    assert (caught.value.scope, caught.value.region) == ("region", REGION) and code in str(caught.value)
    assert zones_of(seen) == ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"]
    assert count_instances() == 0


def test_a_full_zone_moves_the_launch_to_the_next_zone(ec2: AwsEc2) -> None:
    seen: list[dict] = []
    with sold_out("InsufficientInstanceCapacity", {"p5.48xlarge"}, zones={"us-east-1a", "us-east-1b"}, seen=seen):
        instance = launch(ec2, "h100", 8)
    assert zones_of(seen) == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert instance.extra["zone"] == "us-east-1c" and count_instances() == 1
    assert len({params["ClientToken"] for params in seen}) == 3


def test_a_spot_count_limit_blocks_the_region_at_once(ec2: AwsEc2) -> None:
    seen: list[dict] = []
    with sold_out("MaxSpotInstanceCountExceeded", {"g5.12xlarge"}, seen=seen), pytest.raises(NoCapacity) as caught:
        launch(ec2, spot=True)
    assert caught.value.scope == "region" and len(seen) == 1


def test_sold_out_type_falls_through_to_another(ec2: AwsEc2) -> None:
    with sold_out("InsufficientInstanceCapacity", {"p5.48xlarge"}):
        with pytest.raises(NoCapacity):
            launch(ec2, "h100", 8)
        assert launch(ec2, "a100", 8).gpu == "a100"


def test_spot_price_too_low_blocks_the_offer(ec2: AwsEc2) -> None:
    with sold_out("SpotMaxPriceTooLow", {"g5.12xlarge"}), pytest.raises(NoCapacity) as caught:
        launch(ec2, spot=True)
    assert caught.value.scope == "offer"


@pytest.mark.parametrize(("code", "error"), [
    ("InstanceLimitExceeded", QuotaExceeded), ("VcpuLimitExceeded", QuotaExceeded),
    ("AuthFailure", AuthFailed), ("UnauthorizedOperation", AuthFailed), ("InvalidClientTokenId", AuthFailed),
    ("RequestLimitExceeded", RateLimited), ("Throttling", RateLimited),
    ("InvalidParameterValue", InvalidRequest), ("InvalidAMIID.NotFound", InvalidRequest),
    ("InternalError", Transient),
])
def test_other_error_codes(ec2: AwsEc2, code: str, error: type) -> None:
    with sold_out(code, {"g5.12xlarge"}), pytest.raises(error):
        launch(ec2)


@pytest.mark.parametrize("exc", [EndpointConnectionError(endpoint_url="https://ec2.example"),
                                 ReadTimeoutError(endpoint_url="https://ec2.example")])
def test_connection_faults_are_transient(ec2: AwsEc2, exc: Exception) -> None:
    def fault(operation: str, params: dict) -> None:
        raise exc
    with faulty(fault), pytest.raises(Transient):
        ec2.offers(OfferRequest("a10g", 1))


def test_auth_failure_on_probe(ec2: AwsEc2) -> None:
    def fault(operation: str, params: dict) -> None:
        raise ClientError({"Error": {"Code": "AuthFailure", "Message": "bad key"}}, operation)
    with faulty(fault), pytest.raises(AuthFailed):
        ec2.offers(OfferRequest("a10g", 1))


def test_the_launch_image_wins_over_the_policy_image(ec2: AwsEc2) -> None:
    own = boto3.client("ec2", region_name=REGION).register_image(Name="team-cuda", RootDeviceName="/dev/sda1")
    offer = ec2.offers(OfferRequest("a10g", 4))[0]
    instance = ec2.launch(offer, LaunchSpec(5, "gpubot-5-x9", image=own["ImageId"]))  # "self" owns it
    raw = boto3.client("ec2", region_name=REGION).describe_instances(InstanceIds=[instance.instance_id])
    assert raw["Reservations"][0]["Instances"][0]["ImageId"] == own["ImageId"]


# moto's own AMIs: a Deep Learning AMI (owner 898082745236) and a Canonical Ubuntu one (099720109477).
DLAMI, UBUNTU = "ami-999844e0", "ami-1e749f67"


@pytest.mark.parametrize("image", ["ami-0feed1234", UBUNTU, "ubuntu/images/hvm-ssd/ubuntu-xenial-16.04-*"])
def test_an_image_of_an_owner_not_allowed_is_refused_naming_the_allowed_owners(aws: None, image: str) -> None:
    ec2 = make(image_owners=["self", "898082745236"])  # the team's AMIs and the Deep Learning AMIs only
    offer = ec2.offers(OfferRequest("a10g", 4))[0]
    with pytest.raises(ImageRefused) as refused:
        ec2.launch(offer, LaunchSpec(5, "gpubot-5-x8", image=image))
    assert (refused.value.image, refused.value.allowed, refused.value.what) == (
        image, ("self", "898082745236"), "owners")
    assert refused.value.kind == "image_refused" and count_instances() == 0
    assert ec2.launch(offer, LaunchSpec(5, "gpubot-5-x8", image=DLAMI)).instance_id  # an allowed owner's AMI boots


def test_by_default_amazons_and_the_teams_own_amis_boot_and_the_configured_image_is_not_checked(aws: None) -> None:
    ec2 = make(image="ami-0feed1234")  # the team's choice in the policy: not looked up
    offer = ec2.offers(OfferRequest("a10g", 4))[0]
    assert ec2.launch(offer, LaunchSpec(5, "gpubot-5-x7", image="ami-0feed1234")).instance_id
    assert ec2.launch(offer, LaunchSpec(6, "gpubot-6-x7", image=UBUNTU)).instance_id  # moto: alias amazon
    assert ec2.policy.image_owners == ["amazon", "self", "898082745236"]


# -- botocore's own retries: none for RunInstances ------------------------------------------------------------
ICE_XML = (b'<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>InsufficientInstanceCapacity'
           b'</Code><Message>We currently do not have sufficient p5.48xlarge capacity in the Availability Zone you '
           b'requested (us-east-1a).</Message></Error></Errors><RequestID>ice-1</RequestID></Response>')


@pytest.fixture
def ice_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[str]]]:
    """An EC2 endpoint on loopback that answers every call as AWS answers an ICE: HTTP 500 and the Query API error
    XML. Yields its URL and the Action of every request it received."""
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(key, value)
    received: list[str] = []

    class Ec2(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            received.append(parse_qs(body).get("Action", ["?"])[0])
            self.send_response(500)
            self.send_header("Content-Type", "text/xml")
            self.send_header("Content-Length", str(len(ICE_XML)))
            self.end_headers()
            self.wfile.write(ICE_XML)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Ec2)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


def test_an_ice_reaches_the_zone_walk_at_once(ice_endpoint: tuple[str, list[str]]) -> None:
    """botocore retries an HTTP 500 by itself (standard mode: three sends); RunInstances must go out once."""
    url, received = ice_endpoint
    ec2 = AwsEc2("aws", AwsConfig(regions=[REGION], image="ami-12c6146b"), endpoint_url=url)
    params = {"ImageId": "ami-12c6146b", "InstanceType": "p5.48xlarge", "MinCount": 1, "MaxCount": 1}
    with pytest.raises(ClientError, match="InsufficientInstanceCapacity"):
        ec2._client(REGION, launch=True).run_instances(**params)
    assert received == ["RunInstances"]
    with pytest.raises(ClientError, match="InsufficientInstanceCapacity"):
        ec2._client(REGION).run_instances(**params)  # the client every other call uses: botocore retries the 500
    assert received == ["RunInstances"] * (1 + 1 + RETRY_ATTEMPTS)


# -- spot prices ------------------------------------------------------------------------------------------------
def spot_history(prices: dict[str, str], instance_type: str = "p5.48xlarge") -> Any:
    """DescribeSpotPriceHistory answers as AWS does: per AZ an older and the current price (newest first)."""
    def answer(self: Any, operation: str, params: dict) -> Any:
        if operation != "DescribeSpotPriceHistory":
            return ORIGINAL_CALL(self, operation, params)
        now = datetime.now(UTC)
        history = [{"AvailabilityZone": zone, "InstanceType": instance_type, "ProductDescription": "Linux/UNIX",
                    "SpotPrice": price, "Timestamp": now - timedelta(minutes=5)} for zone, price in prices.items()]
        history += [{**entry, "SpotPrice": "99.000000", "Timestamp": now - timedelta(days=1)} for entry in history]
        return {"SpotPriceHistory": history, "NextToken": ""}
    return patch("botocore.client.BaseClient._make_api_call", new=answer)


def test_spot_is_priced_from_the_spot_price_history(ec2: AwsEc2) -> None:
    [spot] = ec2.offers(OfferRequest("h100", 8, spot=True))
    [on_demand] = ec2.offers(OfferRequest("h100", 8))
    assert spot.spot and spot.price_per_gpu_hour == Decimal("0.00001") / 8  # moto's spot price for every type
    assert on_demand.price_per_gpu_hour == Decimal("6.88")


def test_a_spot_launch_walks_the_zones_cheapest_first_and_reports_its_price(aws: None) -> None:
    ec2 = make()
    prices = {"us-east-1a": "30.400000", "us-east-1b": "24.000000", "us-east-1c": "28.800000"}
    seen: list[dict] = []
    with spot_history(prices):
        [offer] = ec2.offers(OfferRequest("h100", 8, spot=True))
        assert offer.price_per_gpu_hour == Decimal("3")  # us-east-1b: 24.00 / 8
        with sold_out("InsufficientInstanceCapacity", {"p5.48xlarge"}, zones={"us-east-1b"}, seen=seen):
            instance = ec2.launch(offer, LaunchSpec(5, "gpubot-5-sp"))
    assert zones_of(seen) == ["us-east-1b", "us-east-1c"]
    assert instance.extra["price_per_gpu_hour"] == Decimal("3.6") and instance.extra["lifecycle"] == "spot"
