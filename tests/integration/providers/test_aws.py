"""AWS EC2 adapter against moto. Capacity and other vendor errors are injected at the one documented seam,
botocore.client.BaseClient._make_api_call (moto docs: patching_other_services), calling through otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any
from unittest.mock import patch

import boto3
import botocore.client
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError
from moto import mock_aws

from domain.errors import AuthFailed, InvalidRequest, NoCapacity, QuotaExceeded, RateLimited, Transient
from domain.model import Instance, OfferRequest
from domain.policy import ProviderPolicy
from domain.ports import LaunchSpec, Provider
from providers.aws import DLAMI_NAME, AwsEc2

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
    with mock_aws():
        yield


def make(**policy: Any) -> AwsEc2:
    settings = {"kind": "aws", "regions": [REGION], "image": "ami-12c6146b", **policy}
    return AwsEc2("aws", ProviderPolicy(**settings))


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


def sold_out(code: str, types: set[str], message: str = "") -> Any:
    """RunInstances of one of `types` fails with `code` (as AWS answers, ICE with HTTP 500)."""
    def fault(operation: str, params: dict) -> None:
        if operation == "RunInstances" and params.get("InstanceType") in types:
            raise ClientError({"Error": {"Code": code, "Message": message or f"{code} (us-east-1a)"},
                               "ResponseMetadata": {"HTTPStatusCode": 500}}, operation)
    return faulty(fault)


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
    assert [p["ClientToken"] for p in seen] == ["gpubot-5-x1:g5.12xlarge"]
    assert "UserData" not in seen[0] and "InstanceMarketOptions" not in seen[0]


def test_spot_launch_asks_for_the_spot_market(ec2: AwsEc2) -> None:
    seen: list[dict] = []
    with faulty(lambda op, params: seen.append(params) if op == "RunInstances" else None):
        launch(ec2, spot=True, start="python serve.py")
    assert seen[0]["InstanceMarketOptions"]["MarketType"] == "spot"
    assert seen[0]["ClientToken"].endswith(":spot")


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
                                  "UnfulfillableCapacity", "Unsupported", "MaxSpotInstanceCountExceeded"])
def test_capacity_errors_block_the_region(ec2: AwsEc2, code: str) -> None:
    with sold_out(code, {"g5.12xlarge"}), pytest.raises(NoCapacity) as caught:
        launch(ec2)
    assert (caught.value.scope, caught.value.region) == ("region", REGION) and code in str(caught.value)
    assert count_instances() == 0


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
    offer = ec2.offers(OfferRequest("a10g", 4))[0]
    instance = ec2.launch(offer, LaunchSpec(5, "gpubot-5-x9", image="ami-0feed1234"))
    raw = boto3.client("ec2", region_name=REGION).describe_instances(InstanceIds=[instance.instance_id])
    assert raw["Reservations"][0]["Instances"][0]["ImageId"] == "ami-0feed1234"
