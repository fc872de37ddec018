"""AWS EC2 adapter (boto3): one on-demand or spot instance per booking, found again by its Name tag.

One offer is one region. Within it, `launch` walks the region's Availability Zones that sell the type (read once
per region and type from DescribeInstanceTypeOfferings), each with an explicit Placement: an AZ out of capacity
(InsufficientInstanceCapacity and its family, spec §5/§7/§10 — capacity is per AZ) moves the launch to the next
AZ, and only when every AZ said so does it raise NoCapacity for the region, so that the acquisition loop moves on
to the next offer (the next region). The AZ walk is this adapter's fallback inside one offer; falling back
across offers stays the loop's.

Retries, RunInstances' parameters and its ClientToken, and the reading of EC2's answers live in
providers.aws.wire.

Spot is priced and billed at the spot price, not the on-demand one: the offer carries the current price
(DescribeSpotPriceHistory, the newest entry of each AZ) of the region's cheapest AZ; a spot launch walks the AZs
cheapest first, and the instance reports the price of the AZ it landed in (`extra["price_per_gpu_hour"]`), which
the booking is billed at. policy.prices override on-demand prices only.

Credentials come from boto3's standard chain (AWS_ACCESS_KEY_ID …); AWS_ENDPOINT_URL is honoured by boto3
itself. Types, prices and error codes live in providers.aws.catalog.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import boto3
from gpubot.domain.errors import ImageRefused, InvalidRequest, NoCapacity
from gpubot.domain.model import Instance, Offer, OfferRequest, parse_instance_tag
from gpubot.domain.ports import GpuReading, LaunchSpec
from gpubot.domain.spot import PREEMPTED
from gpubot.providers.aws.catalog import instance_type_for, price_per_gpu_hour, spot_price_per_gpu_hour
from gpubot.providers.aws.config import AwsConfig
from gpubot.providers.aws.wire import (
    BOTO_CONFIG,
    LAUNCH_CONFIG,
    LIVE_STATES,
    InstanceNotFound,
    ZoneFull,
    mapped,
    run_params,
    tag,
    to_instance,
)
from gpubot.providers.round_cache import RoundCache
from gpubot.providers.startup import cloud_init_user_data

__all__ = ["DLAMI_NAME", "AwsEc2"]

DEFAULT_REGIONS = ["us-east-1"]
SPOT_PRICE_TTL = 60.0  # seconds one DescribeSpotPriceHistory answer prices a region's offers
# The AMI to boot when policy.image is unset: AWS's newest Deep Learning Base GPU AMI in the region (AMI ids
# differ per region and change monthly, so they are looked up, not hard-coded). policy.image may be an
# "ami-…" id (one region) or a name pattern looked up the same way in each region.
DLAMI_NAME = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"


# One boto3 session for the process, as boto3.client()'s default session: botocore parses its JSON models (EC2's
# are megabytes, ~0.15 s of CPU) once per session, and a session per client parsed them again for every region of
# every adapter. A session is not thread-safe, the clients it makes are: clients are made under this lock.
_MAKING_CLIENTS = threading.Lock()


@functools.cache
def _process_session() -> boto3.session.Session:
    """The process's boto3 session (credentials from the environment or the instance, as ever)."""
    return boto3.session.Session()


class AwsEc2:
    """Provider adapter for AWS EC2 (kind "aws")."""

    kind = "aws"

    def __init__(self, name: str, policy: AwsConfig, *, session: Any = None,
                 endpoint_url: str | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self.policy = policy
        self._session = session
        self._endpoint_url = endpoint_url
        self._clients: dict[tuple[str, bool], Any] = {}
        self._amis: dict[tuple[str, str], str] = {}
        self._zones_of: dict[tuple[str, str], list[str]] = {}
        self._spot: RoundCache[list[dict]] = RoundCache(SPOT_PRICE_TTL, clock)

    # -- Provider protocol ---------------------------------------------------------------------------
    def offers(self, request: OfferRequest) -> list[Offer]:
        """One offer per configured region that sells the instance type for this GPU shape (spot: at its price)."""
        instance_type = instance_type_for(request.gpu, request.count)
        if instance_type is None:
            return []
        return [offer for region in self._regions(request.region)
                if (offer := self._offer(region, instance_type, request)) is not None]

    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """run_instances in the offer's region, one Availability Zone after another until one has capacity; a
        live instance of that name is reused."""
        existing = self._find_named(offer.region, spec.name)
        if existing is not None:
            return existing
        refused: list[str] = []
        for zone, spot_price in self._launch_zones(offer):
            try:
                return self._launch_in(offer, spec, zone, spot_price)
            except ZoneFull as full:
                refused.append(f"{zone} {full.code}")
        raise NoCapacity(self.name, f"no Availability Zone of {offer.region} could take {offer.ref}: "
                                    + ("; ".join(refused) or "none sells it"), scope="region", region=offer.region)

    def describe(self, instance: Instance) -> Instance:
        """Current state; ready once running with a public address. Unknown ids come back terminated."""
        region = instance.region or self._regions(None)[0]
        raws = self._by_id(region, instance.instance_id)
        if not raws:
            return replace(instance, status="terminated", ready=False, ssh=None)
        return replace(to_instance(self.name, raws[0], region), name=instance.name or tag(raws[0], "Name"))

    def terminate(self, instance: Instance) -> None:
        """terminate_instances; an instance AWS no longer knows is success, so calling twice is safe."""
        region = instance.region or self._regions(None)[0]
        try:
            with self._mapped(region, tolerate_not_found=True):
                self._client(region).terminate_instances(InstanceIds=[instance.instance_id])
        except InstanceNotFound:
            return

    def list_owned(self) -> list[Instance]:
        """Every non-terminated (or spot-interrupted) instance in our regions whose Name tag is a gpubot tag."""
        return [instance for region in self._regions(None) for instance in self._owned_in(region)]

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """Always empty: EC2 has no GPU metrics API (CloudWatch needs an agent on the host)."""
        return []

    # -- offers ---------------------------------------------------------------------------------------
    def _regions(self, wanted: str | None) -> list[str]:
        return [r for r in (self.policy.regions or DEFAULT_REGIONS) if wanted in (None, r)]

    def _offer(self, region: str, instance_type: str, request: OfferRequest) -> Offer | None:
        if not self._zones(region, instance_type):
            return None
        if request.spot:
            price = min(self._spot_prices(region, instance_type, request.count).values(), default=None)
        else:
            price = price_per_gpu_hour(request.gpu, request.count, self.policy.prices)
        return None if price is None else Offer(self.name, region, request.gpu, request.count, price, "USD",
                                                spot=request.spot, ref=instance_type)

    def _zones(self, region: str, instance_type: str) -> list[str]:
        """The region's Availability Zones that sell the type (read once per region and type)."""
        key = (region, instance_type)
        if key not in self._zones_of:
            with self._mapped(region):
                answer = self._client(region).describe_instance_type_offerings(
                    LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [instance_type]}])
            self._zones_of[key] = sorted(o["Location"] for o in answer.get("InstanceTypeOfferings", []))
        return self._zones_of[key]

    def _spot_prices(self, region: str, instance_type: str, count: int) -> dict[str, Decimal]:
        """Current spot price per GPU-hour in each AZ of the region (read at most every SPOT_PRICE_TTL)."""
        def read() -> list[dict]:
            with self._mapped(region):
                pages = self._client(region).get_paginator("describe_spot_price_history").paginate(
                    InstanceTypes=[instance_type], ProductDescriptions=["Linux/UNIX"], StartTime=datetime.now(UTC))
                return [entry for page in pages for entry in page["SpotPriceHistory"]]
        return spot_price_per_gpu_hour(self._spot.get((region, instance_type), read), count)

    # -- launch ---------------------------------------------------------------------------------------
    def _launch_zones(self, offer: Offer) -> list[tuple[str, Decimal | None]]:
        """The AZs to try, in order, with their spot price per GPU-hour (spot: cheapest first, priced AZs only)."""
        zones = self._zones(offer.region, offer.ref)
        if not offer.spot:
            return [(zone, None) for zone in zones]
        prices = self._spot_prices(offer.region, offer.ref, offer.count)
        return sorted(((zone, prices[zone]) for zone in zones if zone in prices), key=lambda z: (z[1], z[0]))

    def _launch_in(self, offer: Offer, spec: LaunchSpec, zone: str, spot_price: Decimal | None) -> Instance:
        """One RunInstances in one AZ (no botocore retries: providers.aws.wire); ZoneFull when it is full."""
        with self._mapped(offer.region, zonal=True):
            answer = self._client(offer.region, launch=True).run_instances(**run_params(
                offer, spec, zone, image=self._image(offer.region, spec.image), user_data=self._user_data(spec),
                key_name=self.policy.ssh_key_name))
        instance = to_instance(self.name, answer["Instances"][0], offer.region)
        if spot_price is None:
            return instance
        return replace(instance, extra={**instance.extra, "price_per_gpu_hour": spot_price})

    def _image(self, region: str, wanted: str | None = None) -> str:
        """The AMI id to boot: `wanted` (--image, or [providers.X] images[region]), else the policy's, else the
        newest DLAMI. An id or pattern the team did not configure must belong to `image_owners`."""
        image = wanted or self.policy.image or DLAMI_NAME
        checked = wanted is not None and wanted not in {self.policy.image, *self.policy.images.values()}
        if image.startswith("ami-") and not checked:
            return image
        if (region, image) not in self._amis:
            self._amis[region, image] = self._owned_image(region, image) if image.startswith("ami-") else \
                self._newest_image(region, image, checked)
        return self._amis[region, image]

    def _owned_image(self, region: str, ami: str) -> str:
        """`ami` when one of `image_owners` owns it (DescribeImages with Owners); ImageRefused otherwise."""
        with self._mapped(region):
            found = self._client(region).describe_images(Owners=self.policy.image_owners, Filters=[
                {"Name": "image-id", "Values": [ami]}])["Images"]
        if not found:
            raise ImageRefused(self.name, ami, self.policy.image_owners, "owners")
        return ami

    def _newest_image(self, region: str, pattern: str, checked: bool = False) -> str:
        with self._mapped(region):
            images = self._client(region).describe_images(
                Owners=self.policy.image_owners, Filters=[{"Name": "name", "Values": [pattern]},
                                                          {"Name": "state", "Values": ["available"]}])["Images"]
        if not images and checked:  # a booking's pattern: none of the allowed owners has such an AMI
            raise ImageRefused(self.name, pattern, self.policy.image_owners, "owners")
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
        return next((i for i in self._owned_in(region) if i.name == name and i.status != PREEMPTED), None)

    def _owned_in(self, region: str) -> list[Instance]:
        filters = [{"Name": "tag:Name", "Values": ["gpubot-*"]},
                   {"Name": "instance-state-name", "Values": [*LIVE_STATES, "terminated"]}]
        with self._mapped(region):
            pages = self._client(region).get_paginator("describe_instances").paginate(Filters=filters)
            raws = [raw for page in pages for r in page["Reservations"] for raw in r["Instances"]]
        found = [to_instance(self.name, raw, region) for raw in raws if parse_instance_tag(tag(raw, "Name"))]
        return [i for i in found if i.status != "terminated"]

    def _by_id(self, region: str, instance_id: str) -> list[dict]:
        try:
            with self._mapped(region, tolerate_not_found=True):
                answer = self._client(region).describe_instances(InstanceIds=[instance_id])
        except InstanceNotFound:
            return []
        return [raw for r in answer["Reservations"] for raw in r["Instances"]]

    # -- plumbing -------------------------------------------------------------------------------------
    def _client(self, region: str, launch: bool = False) -> Any:
        """The region's EC2 client; `launch`: the one for RunInstances, without botocore retries."""
        with _MAKING_CLIENTS:
            if (region, launch) not in self._clients:
                self._clients[region, launch] = (self._session or _process_session()).client(
                    "ec2", region_name=region, endpoint_url=self._endpoint_url,
                    config=LAUNCH_CONFIG if launch else BOTO_CONFIG)
        return self._clients[region, launch]

    def _mapped(self, region: str, **how: bool) -> AbstractContextManager[None]:
        """botocore's exceptions as ours (providers.aws.wire.mapped)."""
        return mapped(self.name, region, **how)
