"""Four real-provider fakes for one running gpubot: AutoDL, Lambda and RunPod (tests/fakes) and AWS (moto's server),
each booting its machines by the clock, with the provider's start command running for real on a
tests.fakes.machine.Machine; and the settings that point `gpubot serve` at them.

`machine_of(provider, instance_id)` is the machine an instance runs on: AutoDL and RunPod start theirs when the
container starts; Lambda's and AWS's cloud-init is applied here, once, as the VM's first boot would.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import timedelta

import boto3

from tests.e2e.server_kit import free_port
from tests.fakes.autodl_api import FakeAutoDL
from tests.fakes.cloud_init import run_user_data
from tests.fakes.lambda_api import FakeLambda
from tests.fakes.machine import Machine
from tests.fakes.runpod_api import FakeRunPod

__all__ = ["AWS_IMAGE", "Clouds", "provider_config"]

AWS_IMAGE = "ami-12c6146b"  # one of the images moto knows
AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def provider_config(autodl: str = "autodl", lambda_: str = "lambda", runpod: str = "runpod", aws: str = "aws") -> str:
    """The [providers.*] and [fx] tables for the four fakes (renamed when a test wants other names)."""
    return f"""
[providers.{autodl}]
kind = "autodl"
regions = ["westDC2"]
currency = "CNY"

[providers.{lambda_}]
kind = "lambda"
regions = ["us-east-1"]
ssh_key_name = "gpubot"

[providers.{runpod}]
kind = "runpod"

[providers.{aws}]
kind = "aws"
regions = ["us-east-1"]
image = "{AWS_IMAGE}"

[fx]
CNY = 0.14
"""


@dataclass
class Clouds:
    """The four fakes, started; `stop()` ends them and every machine they ran."""

    autodl: FakeAutoDL = field(default_factory=lambda: FakeAutoDL("autodl-e2e-token", create_time=timedelta(
        seconds=1.5), start_time=timedelta(seconds=0.5)))
    lambda_: FakeLambda = field(default_factory=lambda: FakeLambda("lambda-e2e-key", boot_time=timedelta(seconds=2)))
    runpod: FakeRunPod = field(default_factory=lambda: FakeRunPod("runpod-e2e-key", provision_time=timedelta(
        seconds=1.5), start_time=timedelta(seconds=0.5)))
    aws_url: str = ""
    vm_machines: dict[str, Machine] = field(default_factory=dict)

    def start(self) -> Clouds:
        """Serve every fake on 127.0.0.1; AutoDL sells RTX 4090s in westDC2."""
        for fake in (self.autodl, self.lambda_, self.runpod):
            fake.start()
        self.autodl.set_stock("westDC2", "RTX 4090", 8, 8)
        port = free_port()
        from moto.server import ThreadedMotoServer  # here, not at collection (tests/conftest.py, VENDOR_GROUPS)

        self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self._moto.start()
        self.aws_url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        """Stop every fake and remove every machine."""
        for fake in (self.autodl, self.lambda_, self.runpod):
            fake.stop()
        self._moto.stop()
        for machine in self.vm_machines.values():
            machine.remove()

    def env(self) -> dict[str, str]:
        """What `gpubot serve` needs to reach the fakes."""
        return {"AUTODL_TOKEN": self.autodl.token, "AUTODL_API_URL": self.autodl.url,
                "LAMBDA_API_KEY": self.lambda_.api_key, "LAMBDA_API_URL": f"{self.lambda_.url}/api/v1",
                "RUNPOD_API_KEY": self.runpod.api_key, "RUNPOD_API_URL": f"{self.runpod.url}/v2",
                "AWS_ENDPOINT_URL": self.aws_url, **AWS_ENV}

    def ec2(self):
        """A boto3 EC2 client on the moto server."""
        return boto3.client("ec2", endpoint_url=self.aws_url, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def machine_of(self, kind: str, instance_id: str) -> Machine | None:
        """The machine an instance runs on (its first boot applied now for a VM); None while there is none."""
        if kind == "autodl":
            return self.autodl.machine(instance_id)
        if kind == "runpod":
            return self.runpod.machines.get(instance_id)
        if instance_id not in self.vm_machines:
            if kind == "lambda":
                self.vm_machines[instance_id] = self.lambda_.run_user_data(instance_id)
            else:
                raw = self.ec2().describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
                machine = self.vm_machines[instance_id] = Machine()
                run_user_data(machine, base64.b64decode(raw["UserData"]["Value"]).decode())
        return self.vm_machines[instance_id]

    def terminated(self, kind: str, instance_id: str) -> bool:
        """Whether the vendor says the instance no longer runs (and no longer bills)."""
        if kind == "autodl":
            return self.autodl.runs[instance_id].stopped_at is not None
        if kind == "lambda":
            return self.lambda_.runs[instance_id].terminated_at is not None
        if kind == "runpod":
            return self.runpod.runs[instance_id].terminated_at is not None
        raw = self.ec2().describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        return raw["State"]["Name"] in ("shutting-down", "terminated")
