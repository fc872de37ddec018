"""The acquisition loop over a real RunPod adapter and its fake: each answer of the create table does what the
table says — 402 stops every RunPod candidate and pages on-call, 403 skips only the candidate it names."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from unittest.mock import patch

import botocore.client
import pytest
from botocore.exceptions import ClientError
from gpubot.db import attempts as attempt_repo
from gpubot.domain.model import BookingState
from gpubot.providers.aws.adapter import AwsEc2
from gpubot.providers.registry import policy_from_dict
from gpubot.providers.runpod.adapter import RunPod
from gpubot.scheduling.acquisition.acquire import acquire
from gpubot.scheduling.booking.booking import BookingAsk, book

from tests.engine_kit import deliver, make_engine
from tests.fakes.runpod_api import FakeRunPod

LAUNCHED = (BookingState.BOOTING, BookingState.ACTIVE)  # placed; booting until the machine is reachable
POLICY = {"team": {"admins": ["UADMIN"], "alerts_channel": "CALERTS"},
          "providers": {"runpod": {"kind": "runpod", "regions": ["EU-RO-1", "US-TX-3"]}}}


@pytest.fixture
def runpod() -> Iterator[FakeRunPod]:
    fake = FakeRunPod("rk")
    fake.start()
    yield fake
    fake.stop()


def _engine(database_url, clock, fake: FakeRunPod):
    policy = policy_from_dict(POLICY)
    adapter = RunPod("runpod", policy.providers["runpod"], "rk", f"{fake.url}/v2", sleep=lambda _s: None)
    return make_engine(database_url, policy, clock, providers={"runpod": adapter})


def _placed(engine, fake: FakeRunPod):
    booked = book(engine, BookingAsk(owner="UALICE", gpu="h100", count=1, duration=timedelta(hours=2)))
    booking = acquire(engine, booked.booking.id)
    with engine.db.session() as session:
        outcomes = [a.outcome for a in attempt_repo.recent_attempts(booking.id, session=session)]
    return booking, outcomes, [r for r in fake.requests if r.method == "POST" and r.path == "/v2/pods"]


def test_insufficient_balance_stops_runpod_and_pages_once(database_url, clock, runpod: FakeRunPod):
    engine = _engine(database_url, clock, runpod)
    runpod.balance_exhausted = True
    booking, outcomes, creates = _placed(engine, runpod)
    assert booking.state == BookingState.QUEUED
    assert outcomes == ["quota"] and len(creates) == 1, "no other RunPod candidate may be tried after a 402"
    deliver(engine)
    [alert] = [a for a in engine.notifier.alerts if a[0] == "provider_quota"]
    assert "insufficient balance" in alert[2]


def test_no_access_to_one_pool_moves_to_the_next_candidate(database_url, clock, runpod: FakeRunPod):
    engine = _engine(database_url, clock, runpod)
    runpod.denied_gpus.add("NVIDIA H100 PCIe")  # the cheapest H100 on RunPod, offered in both data centres
    booking, outcomes, creates = _placed(engine, runpod)
    assert booking.state in LAUNCHED and outcomes == ["no_access", "no_access", "launched"]
    assert [(c.json()["gpu"]["id"], c.json()["dataCenterIds"]) for c in creates] == [
        ("NVIDIA H100 PCIe", ["EU-RO-1"]), ("NVIDIA H100 PCIe", ["US-TX-3"]), ("NVIDIA H100 80GB HBM3", ["EU-RO-1"])]
    deliver(engine)
    assert engine.notifier.alerts == []
    deliver(engine)
    assert any("no access to that pool" in line for _id, _state, line in engine.notifier.updates)


# -- AWS: every Availability Zone of a region before the next region; spot billed at its AZ's spot price --------
@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2"):
        monkeypatch.delenv(key, raising=False)
    from moto import mock_aws  # here, not at collection (tests/conftest.py, VENDOR_GROUPS)

    with mock_aws():
        yield


def _aws_engine(database_url, clock):
    policy = policy_from_dict({"team": {"admins": ["UADMIN"]}, "acquire": {"probe_timeout": "60s"},  # moto warms up
                               "providers": {"aws": {"kind": "aws", "regions": ["us-east-1", "us-west-2"],
                                                     "image": "ami-12c6146b"}}})
    return make_engine(database_url, policy, clock, providers={"aws": AwsEc2("aws", policy.providers["aws"])})


def _aws_placed(engine, spot: bool = False):
    booked = book(engine, BookingAsk(owner="UALICE", gpu="h100", count=8, duration=timedelta(hours=1), spot=spot))
    booking = acquire(engine, booked.booking.id)
    with engine.db.session() as session:
        outcomes = [(a.region, a.outcome) for a in attempt_repo.recent_attempts(booking.id, session=session)]
    return booking, outcomes


def test_aws_tries_every_zone_of_a_region_before_the_next_region(database_url, clock, aws):
    engine = _aws_engine(database_url, clock)
    seen: list[dict] = []
    east = {f"us-east-1{letter}" for letter in "abcdef"}
    with aws_answers(east, seen):
        booking, outcomes = _aws_placed(engine)
    assert booking.state in LAUNCHED and booking.region == "us-west-2"
    assert outcomes == [("us-east-1", "no_capacity"), ("us-west-2", "launched")]
    tried = [params["Placement"]["AvailabilityZone"] for params in seen]
    assert tried == [*sorted(east), "us-west-2a"]  # six AZs of us-east-1, then the next region


def test_an_aws_spot_booking_is_billed_at_the_spot_price_of_its_zone(database_url, clock, aws):
    engine = _aws_engine(database_url, clock)
    prices = {"us-east-1a": "30.400000", "us-east-1b": "24.000000", "us-east-1c": "28.800000"}
    with aws_answers({"us-east-1b"}, [], spot_prices=prices):
        booking, outcomes = _aws_placed(engine, spot=True)
    assert booking.spot and (booking.region, outcomes) == ("us-east-1", [("us-east-1", "launched")])
    assert booking.price_per_gpu_hour == Decimal("3.6")  # us-east-1c's 28.80 / 8; the offer said 3.00 (1b)


ORIGINAL_CALL = botocore.client.BaseClient._make_api_call


def aws_answers(full: set[str], seen: list[dict], spot_prices: dict[str, str] | None = None):
    """The botocore seam (moto docs: patching_other_services): RunInstances in a `full` zone answers an ICE, and
    with `spot_prices` DescribeSpotPriceHistory answers with the current price of those us-east-1 zones; every
    other call goes to moto."""
    def call(self, operation: str, params: dict):
        if operation == "RunInstances":
            seen.append(params)
            zone = params["Placement"]["AvailabilityZone"]
            if zone in full:
                raise ClientError({"Error": {"Code": "InsufficientInstanceCapacity", "Message": f"none in {zone}"},
                                   "ResponseMetadata": {"HTTPStatusCode": 500}}, operation)
        if operation == "DescribeSpotPriceHistory" and spot_prices is not None:
            east = self.meta.region_name == "us-east-1"
            return {"SpotPriceHistory": [
                {"AvailabilityZone": zone, "InstanceType": params["InstanceTypes"][0], "SpotPrice": price,
                 "ProductDescription": "Linux/UNIX", "Timestamp": datetime.now(UTC)}
                for zone, price in spot_prices.items() if east], "NextToken": ""}
        return ORIGINAL_CALL(self, operation, params)
    return patch("botocore.client.BaseClient._make_api_call", new=call)
