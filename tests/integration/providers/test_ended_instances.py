"""The vendor statuses after which a machine runs nothing read as our "terminated" (gone) in `describe`, and
`list_owned` leaves such machines out, so reconcile stops billing them: RunPod EXITED (the container's command
ended) and TERMINATED (deleted); AutoDL's container shutdown; Lambda's terminating and terminated; EC2's
shutting-down and terminated. Each against its fake (moto for EC2)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import httpx
import pytest
from gpubot.domain.model import OfferRequest
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.autodl.adapter import AutoDL
from gpubot.providers.autodl.config import AutoDLConfig
from gpubot.providers.aws.adapter import AwsEc2
from gpubot.providers.aws.config import AwsConfig
from gpubot.providers.lambda_cloud.adapter import LambdaCloud
from gpubot.providers.lambda_cloud.config import LambdaConfig
from gpubot.providers.runpod.adapter import RunPod
from gpubot.providers.runpod.config import RunPodConfig

from tests.fakes.autodl_api import FakeAutoDL
from tests.fakes.lambda_api import FakeLambda
from tests.fakes.runpod_api import FakeRunPod

KEY = "vendor-key"
SPEC = LaunchSpec(7, "gpubot-7-end", None)


def _until(check: Callable[[], object], seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(check())


@pytest.fixture
def runpod_fake() -> Iterator[FakeRunPod]:
    fake = FakeRunPod(KEY, provision_time=timedelta(0), start_time=timedelta(0))
    fake.start()
    yield fake
    fake.stop()


def test_a_runpod_pod_whose_container_exited_is_terminated_and_no_longer_owned(runpod_fake: FakeRunPod) -> None:
    runpod = RunPod("runpod", RunPodConfig(), KEY, f"{runpod_fake.url}/v2", sleep=lambda s: None)
    offer = next(o for o in runpod.offers(OfferRequest("rtx4090", 1)) if o.available)
    instance = runpod.launch(offer, SPEC)
    assert _until(lambda: runpod.describe(instance).ready)
    assert [i.instance_id for i in runpod.list_owned()] == [instance.instance_id]
    runpod_fake.machines[instance.instance_id].stop()  # the container's command ends: the pod is EXITED
    raw = httpx.get(f"{runpod_fake.url}/v2/pods/{instance.instance_id}", headers={"Authorization": f"Bearer {KEY}"})
    assert raw.json()["status"] == "EXITED"
    ended = runpod.describe(instance)
    assert (ended.status, ended.ready, ended.ssh) == ("terminated", False, None)
    assert runpod.list_owned() == []
    runpod.terminate(ended)  # deleting it (TERMINATED, then unknown) reads the same
    assert runpod.describe(instance).status == "terminated" and runpod_fake.pods == {}


def test_an_autodl_container_shut_down_is_terminated_and_no_longer_owned() -> None:
    fake = FakeAutoDL(KEY, create_time=timedelta(0), start_time=timedelta(0))
    fake.set_stock("westDC2", "RTX 4090", 8, 8)
    fake.start()
    try:
        autodl = AutoDL("autodl", AutoDLConfig(currency="CNY", regions=["westDC2"]), KEY, fake.url,
                        sleep=lambda s: None)
        instance = autodl.launch(autodl.offers(OfferRequest("rtx4090", 1))[0], SPEC)
        assert _until(lambda: autodl.describe(instance).ready)
        assert [i.instance_id for i in autodl.list_owned()] == [instance.instance_id]
        fake.machine(instance.instance_id).stop()  # its cmd ends: AutoDL shuts the container down
        assert _until(lambda: autodl.describe(instance).status == "terminated")
        assert fake.runs[instance.instance_id].stopped_at is not None and autodl.list_owned() == []
    finally:
        fake.stop()


@pytest.mark.parametrize("status", ["terminating", "terminated"])
def test_a_lambda_instance_terminating_or_terminated_is_terminated(status: str) -> None:
    fake = FakeLambda(KEY, launch_window=0.0, boot_time=timedelta(0))
    fake.start()
    try:
        cloud = LambdaCloud("lambda", LambdaConfig(request_interval=timedelta(0)), KEY,
                            f"{fake.url}/api/v1")
        offer = next(o for o in cloud.offers(OfferRequest("a100", 1)) if o.available)
        instance = cloud.launch(offer, SPEC)
        assert cloud.describe(instance).ready
        if status == "terminating":
            fake.instances[instance.instance_id]["status"] = "terminating"  # Lambda still lists it for a while
        else:
            cloud.terminate(instance)
        assert cloud.describe(instance).status == "terminated" and cloud.list_owned() == []
    finally:
        fake.stop()


@pytest.mark.parametrize("state", ["shutting-down", "terminated"])
def test_an_ec2_instance_shutting_down_or_terminated_is_terminated(state: str, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    from moto import mock_aws  # here, not at collection (tests/conftest.py, VENDOR_GROUPS)
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends

    with mock_aws():
        ec2 = AwsEc2("aws", AwsConfig(regions=["us-east-1"], image="ami-12c6146b"))
        instance = ec2.launch(ec2.offers(OfferRequest("a10g", 1))[0], SPEC)
        assert ec2.describe(instance).ready and len(ec2.list_owned()) == 1
        if state == "shutting-down":  # moto jumps straight to terminated: hold the instance on its way out
            ec2_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_instance(instance.instance_id)._state.name = state
        else:
            ec2.terminate(instance)
        assert ec2.describe(instance).status == "terminated" and ec2.list_owned() == []
