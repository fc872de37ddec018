"""What the GCP adapter sends and how it reads answers: the instance resource of an insert, the one retry policy of
its reads, and google-api-core's exceptions mapped onto our tree (codes by providers.gcp_catalog.classify).

Retries: google-api-core owns them, like botocore does for AWS. Reads (get, list, operation wait, delete) retry
5xx, 429 and connection faults for at most READ_RETRY_SECONDS; an insert is never retried by the client (its
`requestId` would make a repeat safe, but a capacity answer must reach the acquisition loop at once).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import requests
from google.api_core import exceptions as gexc
from google.api_core.retry import Retry, if_exception_type
from google.auth import exceptions as auth_exc
from google.cloud import compute_v1
from gpubot.domain.errors import AuthFailed, ProviderError, Transient
from gpubot.domain.model import Offer
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.gcp.catalog import Shape, classify
from gpubot.providers.startup import vm_startup_script

__all__ = ["BOOKING_LABEL", "DEFAULT_IMAGE", "DISK_GB", "READ_RETRY", "SSH_USER", "GoneError", "NotReadyError",
           "instance_resource", "mapped", "request_id", "startup_script"]

BOOKING_LABEL = "gpubot-booking"
# Google's Deep Learning VM image family with CUDA 12.4 (Debian 11); `install-nvidia-driver` makes it install the
# NVIDIA driver at first boot. Not re-checked against Google's current family list (Google retires old families):
# set providers.<name>.image (a family or image URL) to pin the one your project uses.
DEFAULT_IMAGE = "projects/deeplearning-platform-release/global/images/family/common-cu124-debian-11-py310"
DISK_GB = 100  # the Deep Learning VM images need at least 50 GB
SSH_USER = "gpubot"  # the launch's SSH key (if any) is installed for this user through the `ssh-keys` metadata
READ_RETRY_SECONDS = 15.0
READ_RETRY = Retry(predicate=if_exception_type(gexc.ServiceUnavailable, gexc.InternalServerError, gexc.BadGateway,
                                               gexc.GatewayTimeout, gexc.TooManyRequests,
                                               requests.exceptions.ConnectionError),
                   initial=0.2, maximum=2.0, multiplier=2.0, timeout=READ_RETRY_SECONDS)


class GoneError(Exception):
    """The instance (or operation) does not exist: HTTP 404."""


class NotReadyError(Exception):
    """Compute Engine refuses to act on the instance yet (resourceNotReady), e.g. while its insert runs."""


def request_id(name: str, offer: Offer) -> str:
    """The insert's idempotency key: a UUID fixed by instance name and offer, so a repeat creates nothing new."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"gpubot:{name}:{offer.ref}:{'spot' if offer.spot else 'standard'}"))


def startup_script(spec: LaunchSpec, fallback: str | None) -> str | None:
    """The VM's `startup-script` (providers.startup): the telemetry agent as a systemd service, and the start
    command (the launch's, else the provider's `start_command`) run once."""
    return vm_startup_script(replace(spec, start_command=spec.start_command or fallback))


def instance_resource(spec: LaunchSpec, zone: str, shape: Shape, *, spot: bool, image: str,
                      script: str | None) -> compute_v1.Instance:
    """The body of instances.insert: named and labelled with the booking, GPUs, image, Spot, start-up script."""
    accelerators = [compute_v1.AcceleratorConfig(accelerator_type=f"zones/{zone}/acceleratorTypes/{shape.accelerator}",
                                                 accelerator_count=shape.count)] if shape.attached else []
    boot = compute_v1.AttachedDiskInitializeParams(source_image=image, disk_size_gb=DISK_GB)
    disk = compute_v1.AttachedDisk(boot=True, auto_delete=True, initialize_params=boot)
    nic = compute_v1.NetworkInterface(network="global/networks/default", access_configs=[
        compute_v1.AccessConfig(name="External NAT", type_="ONE_TO_ONE_NAT")])
    return compute_v1.Instance(
        name=spec.name, machine_type=f"zones/{zone}/machineTypes/{shape.machine_type}",
        labels={BOOKING_LABEL: str(spec.booking_id)}, guest_accelerators=accelerators, disks=[disk],
        network_interfaces=[nic], scheduling=_scheduling(spot),
        metadata=compute_v1.Metadata(items=[compute_v1.Items(key=k, value=v)
                                            for k, v in _metadata(spec, image, script).items()]))


def _scheduling(spot: bool) -> compute_v1.Scheduling:
    # GPUs cannot live-migrate: a host maintenance event must stop the VM (Google requires TERMINATE).
    if spot:
        return compute_v1.Scheduling(on_host_maintenance="TERMINATE", provisioning_model="SPOT",
                                     instance_termination_action="DELETE", automatic_restart=False)
    return compute_v1.Scheduling(on_host_maintenance="TERMINATE", provisioning_model="STANDARD",
                                 automatic_restart=True)


def _metadata(spec: LaunchSpec, image: str, script: str | None) -> dict[str, str]:
    items = {}
    if image == DEFAULT_IMAGE:
        items["install-nvidia-driver"] = "True"
    if script:
        items["startup-script"] = script
    if spec.ssh_public_key:
        items["ssh-keys"] = f"{SSH_USER}:{spec.ssh_public_key}"
    return items


@contextmanager
def mapped(provider: str, zone: str | None, *, gone_ok: bool = False, not_ready_ok: bool = False) -> Iterator[None]:
    """Turn what google-cloud-compute raises into our error tree (404/resourceNotReady into Gone/NotReady on
    request)."""
    try:
        yield
    except gexc.GoogleAPICallError as exc:
        reason = _reason(exc)
        if gone_ok and exc.code == 404:
            raise GoneError(str(exc.message)) from exc
        if not_ready_ok and reason == "resourceNotReady":
            raise NotReadyError(str(exc.message)) from exc
        raise classify(provider, reason, str(exc.message), zone, exc.code) from exc
    except gexc.RetryError as exc:
        raise Transient(provider, f"gave up retrying: {exc.cause!r}") from exc
    except (auth_exc.RefreshError, auth_exc.DefaultCredentialsError) as exc:
        raise AuthFailed(provider, type(exc).__name__) from exc
    except (auth_exc.TransportError, requests.exceptions.RequestException) as exc:
        raise Transient(provider, f"{type(exc).__name__} talking to Compute Engine") from exc


def _reason(exc: gexc.GoogleAPICallError) -> str:
    """The `reason` of Google's error envelope (errors[0].reason), or "" when absent."""
    first = exc.errors[0] if exc.errors else None
    if isinstance(first, dict):
        return str(first.get("reason") or "")
    return str(getattr(exc, "reason", "") or "")


def operation_error(provider: str, operation: compute_v1.Operation, zone: str) -> ProviderError | None:
    """The error a DONE operation carries (its first `error.errors[].code`), or None when it succeeded."""
    errors = list(operation.error.errors) if operation.error else []
    if not errors:
        return None
    message = "; ".join(e.message for e in errors if e.message)
    return classify(provider, errors[0].code, message, zone, operation.http_error_status_code or None)
