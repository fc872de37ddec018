"""Google Compute Engine adapter (google-cloud-compute, REST transport): one VM per booking, zone by zone.

Decisions (spec providers.md §6, §7, §10):
- Offers: for each configured zone (`[providers.NAME] zones`), the zone's machineTypes and acceleratorTypes lists
  (read once per `catalog_ttl`) say whether it sells the shape (providers.gcp_catalog.SHAPES); the offer's region
  is the zone's region and its ref `<zone>/<machine type>`, so a zone out of capacity blocks that offer and the
  loop tries the region's next zone, then the next region. Google publishes no live capacity: offers are always
  "available" and capacity is learnt at launch.
- Launch: instances.insert (named `spec.name`, labelled `gpubot-booking=<id>`, providers.startup's VM script
  — the agent as a systemd service and the start command — as `startup-script`, Spot as provisioningModel SPOT
  with instanceTerminationAction DELETE) answers with a zonal Operation. It is followed with zoneOperations.wait
  until DONE, for at most `operation_timeout` seconds; a DONE operation's `error.errors[0].code` decides
  (gcp_catalog.classify). An operation still running at the bound is Transient: the launch intent stays open and
  reconciliation finds the VM by its name if it appears.
- list_owned: one aggregated list of the whole project filtered on the `gpubot-booking` label, so a VM in a zone
  dropped from the configuration is still found by reconciliation.
- Describe: ready once RUNNING with an external IP (`ssh gpubot@<ip>`). A VM Compute Engine no longer knows is
  "terminated", or "preempted" when a `compute.instances.preempted` operation names it (Google's documented
  preemption signal); a Spot VM stopping after such an operation is "preempted" too.
- Terminate: instances.delete without waiting; 404 is done (safe twice). A VM whose insert is still running
  cannot be deleted yet (resourceNotReady): that is Transient, so the caller tries again later.
- instance_id is `<zone>/<name>`: Compute Engine addresses an instance by zone and name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from google.api_core.client_options import ClientOptions
from google.cloud import compute_v1
from gpubot.domain.errors import ImageRefused, InvalidRequest, ProviderError, Transient
from gpubot.domain.model import Instance, Offer, OfferRequest, parse_instance_tag
from gpubot.domain.ports import GpuReading, LaunchSpec
from gpubot.domain.spot import PREEMPTED
from gpubot.providers.gcp.catalog import (
    Shape,
    offer_ref,
    price_per_gpu_hour,
    region_of,
    shape_for,
    shape_of,
    split_ref,
)
from gpubot.providers.gcp.config import GcpConfig, image_project
from gpubot.providers.gcp.wire import (
    BOOKING_LABEL,
    DEFAULT_IMAGE,
    READ_RETRY,
    SSH_USER,
    GoneError,
    NotReadyError,
    instance_resource,
    mapped,
    operation_error,
    request_id,
    startup_script,
)

__all__ = ["GcpCompute"]

log = logging.getLogger(__name__)

OPERATION_TIMEOUT = 180.0  # below acquire.lease (5 min): a launch must end before its acquisition lease does
CALL_TIMEOUT = 30.0
WAIT_CALL_TIMEOUT = 130.0  # zoneOperations.wait returns by itself after about 2 minutes
PREEMPTION_OPERATION = "compute.instances.preempted"
_DONE = compute_v1.Operation.Status.DONE


class GcpCompute:
    """The Provider for Google Compute Engine (kind "gcp")."""

    kind = "gcp"

    def __init__(self, name: str, policy: GcpConfig, *, project: str, credentials: Any,
                 api_endpoint: str | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, operation_timeout: float = OPERATION_TIMEOUT,
                 poll_interval: float = 1.0, catalog_ttl: float = 3600.0) -> None:
        self.name, self.policy, self.project = name, policy, project
        options = ClientOptions(api_endpoint=api_endpoint) if api_endpoint else None
        client = {"credentials": credentials, "client_options": options, "transport": "rest"}
        self._instances = compute_v1.InstancesClient(**client)
        self._operations = compute_v1.ZoneOperationsClient(**client)
        self._machine_types = compute_v1.MachineTypesClient(**client)
        self._accelerators = compute_v1.AcceleratorTypesClient(**client)
        self._clock, self._sleep = clock, sleep
        self._operation_timeout, self._poll, self._catalog_ttl = operation_timeout, poll_interval, catalog_ttl
        self._catalogs: dict[str, tuple[float, dict[str, dict[str, int]], dict[str, int]]] = {}

    def close(self) -> None:
        """Close the HTTP sessions."""
        for client in (self._instances, self._operations, self._machine_types, self._accelerators):
            client.transport.close()

    # -- offers -------------------------------------------------------------------------------------------------
    def offers(self, request: OfferRequest) -> list[Offer]:
        """One offer per configured zone that sells the shape (Spot-only shapes only to a Spot request)."""
        shape = shape_for(request.gpu, request.count)
        price = price_per_gpu_hour(request.gpu, request.spot, self.policy.prices)
        if shape is None or price is None or (shape.spot_only and not request.spot):
            return []
        return [Offer(self.name, region_of(zone), request.gpu, request.count, price, "USD", spot=request.spot,
                      ref=offer_ref(zone, shape.machine_type))
                for zone in self.policy.zones
                if request.region in (None, region_of(zone)) and self._sells(zone, shape)]

    def _sells(self, zone: str, shape: Shape) -> bool:
        machine_types, accelerators = self._catalog(zone)
        bundled = machine_types.get(shape.machine_type)
        if bundled is None:
            return False
        if shape.attached:
            return accelerators.get(shape.accelerator, 0) >= shape.count
        return bundled == {shape.accelerator: shape.count}

    def _catalog(self, zone: str) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
        """The zone's machine types (with their bundled accelerators) and accelerator types (max per VM)."""
        cached = self._catalogs.get(zone)
        if cached and self._clock() - cached[0] < self._catalog_ttl:
            return cached[1], cached[2]
        try:
            with mapped(self.name, zone, gone_ok=True):
                machine_types = {m.name: {a.guest_accelerator_type: a.guest_accelerator_count for a in m.accelerators}
                                 for m in self._machine_types.list(project=self.project, zone=zone,
                                                                   retry=READ_RETRY, timeout=CALL_TIMEOUT)}
                accelerators = {a.name: a.maximum_cards_per_instance
                                for a in self._accelerators.list(project=self.project, zone=zone,
                                                                 retry=READ_RETRY, timeout=CALL_TIMEOUT)}
        except GoneError:
            log.warning("%s: zone %s does not exist for project %s; skipping it", self.name, zone, self.project)
            machine_types, accelerators = {}, {}
        self._catalogs[zone] = (self._clock(), machine_types, accelerators)
        return machine_types, accelerators

    # -- launch -------------------------------------------------------------------------------------------------
    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """Insert the VM and follow its operation to DONE; the VM comes back booting, or the error is raised."""
        zone, machine_type = split_ref(offer.ref)
        shape = shape_for(offer.gpu, offer.count)
        if shape is None or shape.machine_type != machine_type:
            raise InvalidRequest(self.name, f"no {offer.count}× {offer.gpu} shape named {offer.ref!r}")
        body = instance_resource(spec, zone, shape, spot=offer.spot, image=self._image(spec),
                                 script=startup_script(spec, self.policy.start_command))
        insert = compute_v1.InsertInstanceRequest(project=self.project, zone=zone, instance_resource=body,
                                                  request_id=request_id(spec.name, offer))
        with mapped(self.name, zone):
            operation = self._instances.insert_unary(request=insert, retry=None, timeout=CALL_TIMEOUT)
        error = operation_error(self.name, self._until_done(zone, operation, spec.name), zone)
        if error is not None:
            raise error
        return Instance(self.name, f"{zone}/{spec.name}", spec.name, region=region_of(zone), status="staging",
                        gpu=offer.gpu, count=offer.count,
                        extra={"zone": zone, "machine_type": machine_type, "spot": offer.spot})

    def _image(self, spec: LaunchSpec) -> str:
        """The image to boot: a booking's own (--image) only from `image_projects` or this project."""
        if spec.image and spec.image not in {self.policy.image, *self.policy.images.values()}:
            project = image_project(spec.image)
            if project is not None and project not in (*self.policy.image_projects, self.project):
                raise ImageRefused(self.name, spec.image, [*self.policy.image_projects, self.project], "projects")
        return spec.image or self.policy.image or DEFAULT_IMAGE

    def _until_done(self, zone: str, operation: compute_v1.Operation, name: str) -> compute_v1.Operation:
        """Wait on the operation (zoneOperations.wait) until DONE, for at most `operation_timeout` seconds."""
        deadline = self._clock() + self._operation_timeout
        while operation.status != _DONE:
            left = deadline - self._clock()
            if left <= 0:
                raise Transient(self.name, f"insert of {name} in {zone} still running after "
                                           f"{self._operation_timeout:.0f}s ({operation.name})")
            with mapped(self.name, zone):
                operation = self._operations.wait(project=self.project, zone=zone, operation=operation.name,
                                                  retry=READ_RETRY, timeout=min(WAIT_CALL_TIMEOUT, left + 5))
            if operation.status != _DONE:
                self._sleep(min(self._poll, max(0.0, deadline - self._clock())))
        return operation

    # -- instances ----------------------------------------------------------------------------------------------
    def describe(self, instance: Instance) -> Instance:
        """Current state; "terminated" or "preempted" once Compute Engine no longer runs it."""
        zone, name = self._locate(instance)
        try:
            with mapped(self.name, zone, gone_ok=True):
                raw = self._instances.get(project=self.project, zone=zone, instance=name, retry=READ_RETRY,
                                          timeout=CALL_TIMEOUT)
        except GoneError:
            stopped = self._preempted_at(zone, name)
            return replace(instance, status="terminated" if stopped is None else PREEMPTED, ready=False, ssh=None,
                           stopped_at=stopped)
        return self._as_seen(raw, zone)

    def terminate(self, instance: Instance) -> None:
        """instances.delete, not waited for; an instance Compute Engine does not know is success."""
        zone, name = self._locate(instance)
        try:
            with mapped(self.name, zone, gone_ok=True, not_ready_ok=True):
                self._instances.delete_unary(project=self.project, zone=zone, instance=name, retry=READ_RETRY,
                                             timeout=CALL_TIMEOUT)
        except GoneError:
            return
        except NotReadyError as exc:
            raise Transient(self.name, f"{name} cannot be deleted yet (its insert is still running): {exc}") from exc

    def list_owned(self) -> list[Instance]:
        """Every VM of the project, in any zone (one aggregated list), with the booking label and a gpubot name."""
        query = compute_v1.AggregatedListInstancesRequest(project=self.project, filter=f"labels.{BOOKING_LABEL}:*")
        with mapped(self.name, None):
            scoped = list(self._instances.aggregated_list(request=query, retry=READ_RETRY, timeout=CALL_TIMEOUT))
        return [self._as_seen(raw, raw.zone.rsplit("/", 1)[-1]) for _scope, found in scoped
                for raw in found.instances if parse_instance_tag(raw.name)]

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """Always empty: Compute Engine's API has no GPU metrics (the agent on the VM reports them)."""
        return []

    def _preempted_at(self, zone: str, name: str) -> datetime | None:
        """When the zone's operations record a preemption of this VM (Google's documented signal), else None."""
        target = f"https://www.googleapis.com/compute/v1/projects/{self.project}/zones/{zone}/instances/{name}"
        query = compute_v1.ListZoneOperationsRequest(
            project=self.project, zone=zone, filter=f'operationType="{PREEMPTION_OPERATION}" AND targetLink="{target}"')
        try:
            with mapped(self.name, zone):
                found = list(self._operations.list(request=query, retry=READ_RETRY, timeout=CALL_TIMEOUT))
        except ProviderError as exc:
            log.warning("%s: cannot read %s's operations (%s); reporting %s as terminated", self.name, zone, exc,
                        name)
            return None
        return min((_moment(op.insert_time) for op in found), default=None)

    def _as_seen(self, raw: compute_v1.Instance, zone: str) -> Instance:
        """The instance, "preempted" (with when) when it is a Spot VM stopping or stopped after a preemption."""
        found = self._to_instance(raw, zone)
        if found.extra["spot"] and raw.status in ("STOPPING", "TERMINATED"):
            stopped = self._preempted_at(zone, raw.name)
            if stopped is not None:
                return replace(found, status=PREEMPTED, stopped_at=stopped)
        return found

    def _locate(self, instance: Instance) -> tuple[str, str]:
        zone, _, name = instance.instance_id.rpartition("/")
        return zone or str(instance.extra.get("zone") or ""), name or instance.name

    def _to_instance(self, raw: compute_v1.Instance, zone: str) -> Instance:
        ip = next((c.nat_i_p for nic in raw.network_interfaces for c in nic.access_configs if c.nat_i_p), None)
        ready = raw.status == "RUNNING" and bool(ip)
        accelerators = {a.accelerator_type.rsplit("/", 1)[-1]: a.accelerator_count for a in raw.guest_accelerators}
        machine_type = raw.machine_type.rsplit("/", 1)[-1]
        gpu, count = shape_of(machine_type, accelerators)
        return Instance(self.name, f"{zone}/{raw.name}", raw.name, region=region_of(zone), status=raw.status.lower(),
                        ready=ready, ssh=f"ssh {SSH_USER}@{ip}" if ready else None, gpu=gpu, count=count,
                        extra={"zone": zone, "machine_type": machine_type, "labels": dict(raw.labels),
                               "spot": raw.scheduling.provisioning_model == "SPOT", "id": str(raw.id)})


def _moment(stamp: str) -> datetime:
    """An operation's RFC 3339 time; an unreadable one counts as the earliest possible (it cannot be later)."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
