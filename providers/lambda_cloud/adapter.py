"""Lambda Cloud adapter (API v1, spec providers.md §2 and §10, lambda_openapi.json).

Decisions:
- Offers come from GET /instance-types, read once per probe round: one round asks for several shapes (a booking's
  first choice and its alternatives) at once, and the listing is shared for `catalog_ttl` seconds (RoundCache),
  so a round costs one call whatever the number of shapes. Instance-type names `gpu_<N>x_<model>[_<variant>...]`
  are mapped to a catalog key and a GPU count by `parse_instance_type`; types outside the catalog (A6000, GH200,
  B200...) are skipped. Price per GPU-hour = price_cents_per_hour / 100 / N, in USD. One offer per region: the
  policy's regions, or else every region any type currently lists as having capacity (the only regions this
  single call reveals). `available` = the region is in the type's `regions_with_capacity_available`.
- Lambda sells no spot instances: a spot request gets no offers.
- Pacing: Lambda allows about one request per second per account, and one launch per 12 s. Every request
  (retries included: the pacing hook runs inside VendorHttp before each attempt) waits for its turn at the
  injected Pacer — scheduling.pacing.SharedPacer from the wiring, whose turns live in the database so that
  replicas share them; an in-process LocalPacer otherwise. A launch books one turn under both gates (requests
  and launches) at once, so it goes out when both limits allow it. The intervals are `request_interval` and
  `launch_interval` in the provider's policy (defaults 1 s and 12 s).
- A 429 from Lambda itself is retried by VendorHttp (Retry-After honoured); when retries run out the
  RateLimited carries retry_after=launch_interval for a launch unless Lambda sent a Retry-After.
- User data is `#cloud-config` from providers.startup: it installs the telemetry agent as a systemd service
  and runs `start_command` once. Lambda itself takes registered key *names* only (`policy.ssh_key_name`,
  default "gpubot"); a `LaunchSpec.ssh_public_key` is added for the default user by cloud-init.
- 404s (spec §10): for one instance, `global/object-does-not-exist` means it is gone (describe → terminated,
  terminate → done). `global/not-found` — or a 404 without Lambda's error envelope — is a wrong route (a bad
  base URL, a path Lambda does not serve): InvalidRequest, never "gone", so a misconfiguration cannot make
  every instance look terminated.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from typing import Any

import httpx
from gpubot.domain.catalog import resolve_gpu
from gpubot.domain.errors import (
    AuthFailed,
    InvalidRequest,
    NoCapacity,
    ProviderError,
    QuotaExceeded,
    RateLimited,
    Transient,
)
from gpubot.domain.model import Instance, Offer, OfferRequest, parse_instance_tag
from gpubot.domain.ports import GpuReading, LaunchSpec, Pacer
from gpubot.providers.http import VendorHttp, vendor_shape
from gpubot.providers.lambda_cloud.config import LambdaConfig
from gpubot.providers.pacing import LocalPacer
from gpubot.providers.round_cache import RoundCache
from gpubot.providers.startup import cloud_init_user_data

__all__ = ["DEFAULT_BASE_URL", "LAUNCH_INTERVAL", "REQUEST_INTERVAL", "LambdaCloud", "parse_instance_type",
           "price_per_gpu_hour"]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://cloud.lambda.ai/api/v1"
LAUNCH_INTERVAL = 12.0  # spec §2: /instance-operations/launch 1 per 12 s
REQUEST_INTERVAL = 1.0  # spec §2 and §10: about one request per second, every call
CATALOG_TTL = 5.0  # seconds one /instance-types answer serves a probe round
LAUNCH_PATH = "instance-operations/launch"
TAG_KEY = "gpubot-booking"
DEFAULT_SSH_KEY = "gpubot"

CAPACITY_CODE = "instance-operations/launch/insufficient-capacity"
QUOTA_CODE = "global/quota-exceeded"
GONE_CODE = "global/object-does-not-exist"
WRONG_ROUTE_CODE = "global/not-found"
AUTH_CODES = frozenset({"global/invalid-api-key", "global/unauthorized", "global/account-inactive",
                        "global/forbidden", "global/invalid-address"})
INVALID_CODES = frozenset({"global/invalid-parameters", "global/object-does-not-exist",
                           "instance-operations/launch/file-system-in-wrong-region"})
# read as our "terminated"; "preempted" is listed: reconcile settles it as a preemption
GONE_STATUSES = frozenset({"terminating", "terminated"})

_TYPE_NAME = re.compile(r"gpu_(\d+)x_([a-z0-9]+)((?:_[a-z0-9]+)*)")
_MEMORY = re.compile(r"\d+gb")


def parse_instance_type(name: str) -> tuple[str, int] | None:
    """(catalog GPU key, GPU count) for a Lambda type name like `gpu_8x_a100_80gb_sxm4`, or None."""
    match = _TYPE_NAME.fullmatch(name or "")
    if not match:
        return None
    count, model = int(match.group(1)), match.group(2)
    memory = next((t for t in match.group(3).split("_") if _MEMORY.fullmatch(t)), None)
    gpu = resolve_gpu(f"{model}-{memory}" if memory else model)
    return (gpu, count) if gpu and count > 0 else None


def price_per_gpu_hour(price_cents_per_hour: int, count: int) -> Decimal:
    """USD per GPU-hour from Lambda's whole-instance price in cents per hour."""
    return Decimal(int(price_cents_per_hour)) / Decimal(100 * count)


class LambdaCloud:
    """The Provider for Lambda Cloud."""

    kind = "lambda"

    def __init__(self, name: str, policy: LambdaConfig, api_key: str, base_url: str = DEFAULT_BASE_URL, *,
                 transport: httpx.BaseTransport | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, timeout: float = 10.0, attempts: int = 3,
                 launch_interval: float | None = None, request_interval: float | None = None,
                 pacer: Pacer | None = None, catalog_ttl: float = CATALOG_TTL) -> None:
        self.name, self.policy = name, policy
        self._http = VendorHttp(name, base_url, {"Authorization": f"Bearer {api_key}"}, timeout=timeout,
                                attempts=attempts, transport=transport, sleep=sleep, pace=self._wait_turn)
        self._pacer = pacer or LocalPacer(clock, sleep)
        self._launch_interval = _interval(launch_interval, policy.launch_interval, LAUNCH_INTERVAL)
        self._request_interval = _interval(request_interval, policy.request_interval, REQUEST_INTERVAL)
        self._types: RoundCache[dict] = RoundCache(catalog_ttl, clock)

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._http.close()

    # -- offers -------------------------------------------------------------------------------------------
    def offers(self, request: OfferRequest) -> list[Offer]:
        """Offers for the request, one per region, priced per GPU-hour."""
        if request.spot:
            return []
        items = self._types.get("instance-types", lambda: self._data(self._http.request("GET", "instance-types")))
        with vendor_shape(self.name):
            regions = self._regions(request, items.values())
            return [offer for item in items.values() for offer in self._offers_for(item, request, regions)]

    def _regions(self, request: OfferRequest, items: Any) -> list[str]:
        known = sorted({r["name"] for item in items for r in item["regions_with_capacity_available"]})
        regions = list(self.policy.regions) or ([request.region] if request.region else known)
        return [r for r in regions if not request.region or r == request.region]

    def _offers_for(self, item: dict, request: OfferRequest, regions: list[str]) -> list[Offer]:
        itype = item["instance_type"]
        if parse_instance_type(itype["name"]) != (request.gpu, request.count):
            return []
        price = price_per_gpu_hour(itype["price_cents_per_hour"], request.count)
        free = {r["name"] for r in item["regions_with_capacity_available"]}
        return [Offer(self.name, region, request.gpu, request.count, price, "USD", available=region in free,
                      ref=itype["name"]) for region in regions]

    # -- launch -------------------------------------------------------------------------------------------
    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """Launch one instance of `offer.ref` in `offer.region`; it comes back booting."""
        body = self._launch_body(offer, spec)
        try:
            response = self._http.request("POST", LAUNCH_PATH, idempotent=False, json=body)
        except RateLimited as exc:
            raise RateLimited(self.name, exc.detail, exc.retry_after or self._launch_interval) from None
        data = self._data(response, region=offer.region)
        with vendor_shape(self.name):
            instance_id = str(data["instance_ids"][0])
        return Instance(self.name, instance_id, spec.name, region=offer.region, status="booting",
                        gpu=offer.gpu, count=offer.count, extra={"instance_type": offer.ref})

    def _launch_body(self, offer: Offer, spec: LaunchSpec) -> dict[str, Any]:
        body: dict[str, Any] = {
            "region_name": offer.region,
            "instance_type_name": offer.ref,
            "ssh_key_names": [self.policy.ssh_key_name or DEFAULT_SSH_KEY],
            "name": spec.name,
            "tags": [{"key": TAG_KEY, "value": str(spec.booking_id)}],
        }
        user_data = cloud_init_user_data(replace(spec, start_command=spec.start_command
                                                 or self.policy.start_command))
        if user_data:
            body["user_data"] = user_data
        return body

    def _wait_turn(self, method: str, path: str) -> None:
        """Pace every attempt under the account-wide request gate, and a launch under the launch gate as well."""
        gates = [(f"lambda:{self.name}", self._request_interval)]
        if path == LAUNCH_PATH:
            gates.append((f"lambda:{self.name}:launch", self._launch_interval))
        self._pacer.wait_turn(*gates)

    # -- instances ----------------------------------------------------------------------------------------
    def describe(self, instance: Instance) -> Instance:
        """Current state of the instance; "terminated" when Lambda no longer knows it."""
        response = self._http.request("GET", f"instances/{instance.instance_id}")
        if self._is_gone(response):
            return replace(instance, status="terminated", ready=False, ssh=None)
        return self._to_instance(self._data(response))

    def terminate(self, instance: Instance) -> None:
        """Terminate the instance; an unknown instance counts as done."""
        response = self._http.request("POST", "instance-operations/terminate",
                                      json={"instance_ids": [instance.instance_id]})
        if not self._is_gone(response):
            self._data(response)

    def list_owned(self) -> list[Instance]:
        """Live (or preempted) instances whose name carries our `gpubot-` tag."""
        items = self._data(self._http.request("GET", "instances"))
        with vendor_shape(self.name):
            found = [self._to_instance(item) for item in items]
        return [i for i in found if parse_instance_tag(i.name) and i.status not in GONE_STATUSES]

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """Lambda's API reports no GPU metrics."""
        return []

    def _to_instance(self, data: dict) -> Instance:
        with vendor_shape(self.name):
            gpu, count = parse_instance_type(data["instance_type"]["name"]) or ("", 0)
            status, ip = str(data["status"]), data.get("ip")
            status = "terminated" if status in GONE_STATUSES else status
            return Instance(self.name, str(data["id"]), data.get("name") or "", region=data["region"]["name"],
                            status=status, ready=status == "active" and bool(ip),
                            ssh=f"ssh ubuntu@{ip}" if ip else None, gpu=gpu, count=count,
                            extra={"instance_type": data["instance_type"]["name"],
                                   "tags": data.get("tags") or []})

    # -- answers ------------------------------------------------------------------------------------------
    def _data(self, response: httpx.Response, region: str | None = None) -> Any:
        """The `data` of a successful answer, or the matching ProviderError."""
        if not response.is_success:
            raise self._error(response, region)
        try:
            return response.json()["data"]
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("%s: unreadable answer HTTP %s: %s", self.name, response.status_code,
                        response.text[:500])
            raise Transient(self.name, "unreadable answer") from exc

    def _is_gone(self, response: httpx.Response) -> bool:
        """Lambda says the instance does not exist (not: the route does not exist)."""
        return response.status_code == 404 and _error_code(response)[0] == GONE_CODE

    def _error(self, response: httpx.Response, region: str | None) -> ProviderError:
        code, message = _error_code(response)
        if code == CAPACITY_CODE:
            return NoCapacity(self.name, message, scope="region", region=region)
        if code == QUOTA_CODE:
            return QuotaExceeded(self.name, message)
        if response.status_code in (401, 403) or code in AUTH_CODES:
            return AuthFailed(self.name, message or f"HTTP {response.status_code}")
        if code in INVALID_CODES:
            return InvalidRequest(self.name, f"{code}: {message}")
        if code == WRONG_ROUTE_CODE or response.status_code == 404:  # or a 404 without Lambda's envelope
            return InvalidRequest(self.name, f"wrong route (HTTP 404 {code or 'without an error code'}): "
                                             f"{response.request.url.path}")
        log.warning("%s: unexpected answer HTTP %s: %s", self.name, response.status_code, response.text[:500])
        return Transient(self.name, f"HTTP {response.status_code} {code}".strip())


def _interval(given: float | None, configured, default: float) -> float:
    """Seconds between turns: the constructor's, else the policy's (a timedelta), else Lambda's documented one."""
    if given is not None:
        return given
    return configured.total_seconds() if configured is not None else default


def _error_code(response: httpx.Response) -> tuple[str, str]:
    """(code, message) of Lambda's error envelope; empty strings when absent."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return "", ""
    if not isinstance(error, dict):
        return "", ""
    return str(error.get("code") or ""), str(error.get("message") or "")
