"""What the AWS adapter sends and how it reads answers: the botocore client configs, RunInstances' parameters and
ClientToken, an EC2 instance read into ours, and botocore's exceptions mapped onto our tree (codes by
providers.aws.catalog).

Retries: botocore owns AWS retries for every call but RunInstances (standard mode, up to RETRY_ATTEMPTS retries
after the first attempt, for throttling, 5xx and connection faults). RunInstances goes out on a client of its own
without botocore retries (total_max_attempts=1): AWS answers an ICE with HTTP 500, which botocore would otherwise
retry in the same AZ several times before the walk could move on. A throttled or failed RunInstances reaches the
acquisition loop at once as RateLimited or Transient, and the queue tries again later: for launches that is the
one place they are retried. The ClientToken (name, type, AZ, market) makes a repeated RunInstances return the
instance it made.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from gpubot.domain.model import Instance, Offer
from gpubot.domain.ports import LaunchSpec
from gpubot.domain.spot import PREEMPTED
from gpubot.providers.aws.catalog import ZONE_CAPACITY, gpu_shape, map_boto_error

__all__ = ["BOOKING_TAG", "BOTO_CONFIG", "LAUNCH_CONFIG", "LIVE_STATES", "RETRY_ATTEMPTS", "InstanceNotFound",
           "ZoneFull", "client_token", "mapped", "run_params", "tag", "to_instance"]

RETRY_ATTEMPTS = 3
BOTO_CONFIG = Config(retries={"max_attempts": RETRY_ATTEMPTS, "mode": "standard"}, connect_timeout=5,
                     read_timeout=20)
LAUNCH_CONFIG = Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=5, read_timeout=60)
SSH_USER = "ubuntu"
LIVE_STATES = ["pending", "running", "shutting-down", "stopping", "stopped"]
ENDED = {"shutting-down": "terminated"}  # on its way out, no longer billed: our "terminated" (gone)
# StateReason codes of a spot instance EC2 interrupted (terminated, or stopped/hibernated) — AWS EC2 user guide,
# "Find interrupted Spot Instances". Terminated ones stay visible to DescribeInstances for about an hour.
SPOT_INTERRUPTED = frozenset({"Server.SpotInstanceTermination", "Server.SpotInstanceShutdown"})
_TRANSITION_TIME = re.compile(r"\((\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?:GMT|UTC)\)")
BOOKING_TAG = "gpubot-booking"


class InstanceNotFound(Exception):
    """The instance id is unknown to EC2."""


class ZoneFull(Exception):
    """One Availability Zone has no capacity for the launch (an error code of ZONE_CAPACITY)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@contextmanager
def mapped(provider: str, region: str, *, tolerate_not_found: bool = False, zonal: bool = False) -> Iterator[None]:
    """botocore's exceptions as ours; InstanceNotFound or ZoneFull instead where the caller handles them."""
    try:
        yield
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if tolerate_not_found and code == "InvalidInstanceID.NotFound":
            raise InstanceNotFound from exc
        if zonal and code in ZONE_CAPACITY:
            raise ZoneFull(code) from exc
        raise map_boto_error(provider, exc, region) from exc
    except BotoCoreError as exc:
        raise map_boto_error(provider, exc, region) from exc


def run_params(offer: Offer, spec: LaunchSpec, zone: str, *, image: str, user_data: str | None,
               key_name: str | None) -> dict[str, Any]:
    """RunInstances' keyword arguments for one launch in one AZ."""
    tags = [{"Key": "Name", "Value": spec.name}, {"Key": BOOKING_TAG, "Value": str(spec.booking_id)}]
    params: dict[str, Any] = {
        "ImageId": image, "InstanceType": offer.ref, "MinCount": 1, "MaxCount": 1,
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}],
        "Placement": {"AvailabilityZone": zone}, "ClientToken": client_token(spec.name, offer, zone),
    }
    if user_data:
        params["UserData"] = user_data
    if key_name:
        params["KeyName"] = key_name
    if offer.spot:
        params["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {
            "SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}}
    return params


def client_token(name: str, offer: Offer, zone: str) -> str:
    """Idempotency token for RunInstances: same booking name, offer and AZ → same token (≤ 64 chars).

    The type and AZ are part of it because EC2 refuses a reused token with different parameters
    (IdempotentParameterMismatch), and the AZ walk and the acquisition loop try other AZs and types under the
    same name.
    """
    return f"{name}:{offer.ref}:{zone}{':spot' if offer.spot else ''}"[:64]


def to_instance(provider: str, raw: dict, region: str) -> Instance:
    """One DescribeInstances/RunInstances instance as ours; ready once running with a public address."""
    state = raw.get("State", {}).get("Name", "unknown")
    host = raw.get("PublicIpAddress") or raw.get("PublicDnsName") or None
    ready = state == "running" and host is not None
    gpu, count = gpu_shape(raw.get("InstanceType", ""))
    interrupted = raw.get("StateReason", {}).get("Code") in SPOT_INTERRUPTED
    return Instance(provider, raw["InstanceId"], tag(raw, "Name"), region=region,
                    status=PREEMPTED if interrupted else ENDED.get(state, state), ready=ready,
                    ssh=f"ssh {SSH_USER}@{host}" if ready else None, gpu=gpu, count=count,
                    stopped_at=_transition_time(raw) if interrupted else None,
                    extra={"instance_type": raw.get("InstanceType"), "lifecycle": raw.get("InstanceLifecycle"),
                           "zone": raw.get("Placement", {}).get("AvailabilityZone")})


def tag(raw: dict, key: str) -> str:
    """The value of the instance's tag `key` ("" when it has none)."""
    return next((t["Value"] for t in raw.get("Tags", []) if t.get("Key") == key), "")


def _transition_time(raw: dict) -> datetime | None:
    """When the last state change happened, from `StateTransitionReason` (`… (2026-11-30 12:00:00 GMT)`)."""
    match = _TRANSITION_TIME.search(raw.get("StateTransitionReason") or "")
    return datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) if match else None
