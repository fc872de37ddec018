"""AWS EC2 adapter (boto3): one on-demand or spot instance per booking, found again by its Name tag.

Retries: botocore owns AWS retries (standard mode, RETRY_ATTEMPTS total attempts, for throttling, 5xx and
connection faults); this module never loops on errors. Credentials come from boto3's standard chain
(AWS_ACCESS_KEY_ID …); AWS_ENDPOINT_URL is honoured by boto3 itself. Types, prices and error mapping live
in providers.aws_catalog.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from domain.errors import InvalidRequest
from domain.model import Instance, Offer, OfferRequest, parse_instance_tag
from domain.policy import ProviderPolicy
from domain.ports import GpuReading, LaunchSpec
from providers.aws_catalog import gpu_shape, instance_type_for, map_boto_error, price_per_gpu_hour
from providers.startup import cloud_init_user_data

__all__ = ["DLAMI_NAME", "AwsEc2"]

DEFAULT_REGIONS = ["us-east-1"]
RETRY_ATTEMPTS = 3
BOTO_CONFIG = Config(retries={"max_attempts": RETRY_ATTEMPTS, "mode": "standard"}, connect_timeout=5,
                     read_timeout=20)
# The AMI to boot when policy.image is unset: AWS's newest Deep Learning Base GPU AMI in the region (AMI ids
# differ per region and change monthly, so they are looked up, not hard-coded). policy.image may be an
# "ami-…" id (one region) or a name pattern looked up the same way in each region.
DLAMI_NAME = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"
SSH_USER = "ubuntu"
LIVE_STATES = ["pending", "running", "shutting-down", "stopping", "stopped"]
BOOKING_TAG = "gpubot-booking"


class AwsEc2:
    """Provider adapter for AWS EC2 (kind "aws")."""

    kind = "aws"

    def __init__(self, name: str, policy: ProviderPolicy, *, session: Any = None,
                 endpoint_url: str | None = None) -> None:
        self.name = name
        self.policy = policy
        self._session = session
        self._endpoint_url = endpoint_url
        self._clients: dict[str, Any] = {}
        self._amis: dict[tuple[str, str], str] = {}
        self._offered: dict[tuple[str, str], bool] = {}

    # -- Provider protocol ---------------------------------------------------------------------------
    def offers(self, request: OfferRequest) -> list[Offer]:
        """One offer per configured region that sells the instance type for this GPU shape."""
        instance_type = instance_type_for(request.gpu, request.count)
        price = price_per_gpu_hour(request.gpu, request.count, self.policy.prices)
        if instance_type is None or price is None:
            return []
        return [Offer(self.name, region, request.gpu, request.count, price, "USD", spot=request.spot,
                      ref=instance_type)
                for region in self._regions(request.region) if self._is_offered(region, instance_type)]

    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """run_instances with Name/booking tags and a ClientToken; a live instance of that name is reused."""
        existing = self._find_named(offer.region, spec.name)
        if existing is not None:
            return existing
        with self._mapped(offer.region):
            answer = self._client(offer.region).run_instances(**self._run_params(offer, spec))
        return self._instance(answer["Instances"][0], offer.region)

    def describe(self, instance: Instance) -> Instance:
        """Current state; ready once running with a public address. Unknown ids come back terminated."""
        region = instance.region or self._regions(None)[0]
        raws = self._by_id(region, instance.instance_id)
        if not raws:
            return replace(instance, status="terminated", ready=False, ssh=None)
        return replace(self._instance(raws[0], region), name=instance.name or _tag(raws[0], "Name"))

    def terminate(self, instance: Instance) -> None:
        """terminate_instances; an instance AWS no longer knows is success, so calling twice is safe."""
        region = instance.region or self._regions(None)[0]
        try:
            with self._mapped(region, tolerate_not_found=True):
                self._client(region).terminate_instances(InstanceIds=[instance.instance_id])
        except _NotFound:
            return

    def list_owned(self) -> list[Instance]:
        """Every non-terminated instance in our regions whose Name tag is a gpubot tag."""
        return [instance for region in self._regions(None) for instance in self._owned_in(region)]

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """Always empty: EC2 has no GPU metrics API (CloudWatch needs an agent on the host)."""
        return []

    # -- offers ---------------------------------------------------------------------------------------
    def _regions(self, wanted: str | None) -> list[str]:
        return [r for r in (self.policy.regions or DEFAULT_REGIONS) if wanted in (None, r)]

    def _is_offered(self, region: str, instance_type: str) -> bool:
        key = (region, instance_type)
        if key not in self._offered:
            with self._mapped(region):
                answer = self._client(region).describe_instance_type_offerings(
                    LocationType="region", Filters=[{"Name": "instance-type", "Values": [instance_type]}])
            self._offered[key] = bool(answer.get("InstanceTypeOfferings"))
        return self._offered[key]

    # -- launch ---------------------------------------------------------------------------------------
    def _run_params(self, offer: Offer, spec: LaunchSpec) -> dict[str, Any]:
        tags = [{"Key": "Name", "Value": spec.name}, {"Key": BOOKING_TAG, "Value": str(spec.booking_id)}]
        params: dict[str, Any] = {
            "ImageId": self._image(offer.region, spec.image), "InstanceType": offer.ref, "MinCount": 1, "MaxCount": 1,
            "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}],
            "ClientToken": client_token(spec.name, offer),
        }
        user_data = self._user_data(spec)
        if user_data:
            params["UserData"] = user_data
        if self.policy.ssh_key_name:
            params["KeyName"] = self.policy.ssh_key_name
        if offer.spot:
            params["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {
                "SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}}
        return params

    def _image(self, region: str, wanted: str | None = None) -> str:
        image = wanted or self.policy.image or DLAMI_NAME  # wanted: --image or [providers.X] images[region]
        if image.startswith("ami-"):
            return image
        if (region, image) not in self._amis:
            self._amis[region, image] = self._newest_image(region, image)
        return self._amis[region, image]

    def _newest_image(self, region: str, pattern: str) -> str:
        with self._mapped(region):
            images = self._client(region).describe_images(
                Owners=["amazon", "self"], Filters=[{"Name": "name", "Values": [pattern]},
                                                    {"Name": "state", "Values": ["available"]}])["Images"]
        if not images:
            hint = f"set providers.{self.name}.image"
            raise InvalidRequest(self.name, f"no AMI named {pattern!r} in {region}; {hint}")
        # Newest by creation date; DLAMI names end in a build date, which breaks ties.
        return max(images, key=lambda i: (i.get("CreationDate", ""), i.get("Name", "")))["ImageId"]

    def _user_data(self, spec: LaunchSpec) -> str | None:
        """cloud-init user data: the telemetry agent as a systemd service, the start command, the SSH key."""
        return cloud_init_user_data(replace(spec, start_command=spec.start_command or self.policy.start_command))

    # -- reading --------------------------------------------------------------------------------------
    def _find_named(self, region: str, name: str) -> Instance | None:
        return next((i for i in self._owned_in(region) if i.name == name), None)

    def _owned_in(self, region: str) -> list[Instance]:
        filters = [{"Name": "tag:Name", "Values": ["gpubot-*"]},
                   {"Name": "instance-state-name", "Values": LIVE_STATES}]
        with self._mapped(region):
            pages = self._client(region).get_paginator("describe_instances").paginate(Filters=filters)
            raws = [raw for page in pages for r in page["Reservations"] for raw in r["Instances"]]
        return [self._instance(raw, region) for raw in raws if parse_instance_tag(_tag(raw, "Name"))]

    def _by_id(self, region: str, instance_id: str) -> list[dict]:
        try:
            with self._mapped(region, tolerate_not_found=True):
                answer = self._client(region).describe_instances(InstanceIds=[instance_id])
        except _NotFound:
            return []
        return [raw for r in answer["Reservations"] for raw in r["Instances"]]

    def _instance(self, raw: dict, region: str) -> Instance:
        state = raw.get("State", {}).get("Name", "unknown")
        host = raw.get("PublicIpAddress") or raw.get("PublicDnsName") or None
        ready = state == "running" and host is not None
        gpu, count = gpu_shape(raw.get("InstanceType", ""))
        return Instance(self.name, raw["InstanceId"], _tag(raw, "Name"), region=region, status=state,
                        ready=ready, ssh=f"ssh {SSH_USER}@{host}" if ready else None, gpu=gpu, count=count,
                        extra={"instance_type": raw.get("InstanceType"),
                               "lifecycle": raw.get("InstanceLifecycle")})

    # -- plumbing -------------------------------------------------------------------------------------
    def _client(self, region: str) -> Any:
        if region not in self._clients:
            session = self._session or boto3.session.Session()
            self._clients[region] = session.client("ec2", region_name=region, endpoint_url=self._endpoint_url,
                                                   config=BOTO_CONFIG)
        return self._clients[region]

    @contextmanager
    def _mapped(self, region: str, *, tolerate_not_found: bool = False) -> Iterator[None]:
        try:
            yield
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if tolerate_not_found and code == "InvalidInstanceID.NotFound":
                raise _NotFound from exc
            raise map_boto_error(self.name, exc, region) from exc
        except BotoCoreError as exc:
            raise map_boto_error(self.name, exc, region) from exc


class _NotFound(Exception):
    """The instance id is unknown to EC2."""


def client_token(name: str, offer: Offer) -> str:
    """Idempotency token for RunInstances: same booking name and same offer → same token (≤ 64 chars).

    The offer is part of it because EC2 refuses a reused token with different parameters
    (IdempotentParameterMismatch), and the acquisition loop may try another type under the same name.
    """
    return f"{name}:{offer.ref}{':spot' if offer.spot else ''}"[:64]


def _tag(raw: dict, key: str) -> str:
    return next((t["Value"] for t in raw.get("Tags", []) if t.get("Key") == key), "")
