"""The `terraform` provider: a team-owned Terraform module makes each machine, one state per booking.

Offers are the configured shapes in each configured region, at their configured price; Terraform cannot ask a cloud
whether it has capacity, so every offer is `available` and capacity is learnt at launch. A launch copies the
module's initialised version into the booking's working directory (providers.terraform.workdirs) and runs `apply`
with gpubot's variables (config.GPUBOT_VARIABLES, plus `[providers.X] vars`). An apply whose errors name one of
`capacity_errors` is NoCapacity for that offer; a timeout is Transient; any other failure is a ProviderError with
Terraform's first diagnostic. A failed apply is destroyed at once, and its directory removed once nothing is left.

`describe` refreshes the state (`apply -refresh-only`) and reads the outputs: `instance_id` and `ssh_host`
(required), `ssh_user` (default ubuntu), `ssh_port` (default 22), `ready` (optional bool; absent: ready once
`ssh_host` is set). `terminate` runs `destroy` and removes the directory only once the state holds nothing, so it
is safe twice and a failed destroy leaves everything for the next try. `list_owned` reads the states on disk: a
directory whose state holds resources is listed, status `incomplete` when its apply never wrote `instance_id` (a
crash mid-apply: reconciliation destroys it), `pending` while this process still applies it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from gpubot.domain.errors import ConfigError, InvalidRequest, NoCapacity, ProviderError, RateLimited, Transient
from gpubot.domain.model import Instance, Offer, OfferRequest
from gpubot.domain.ports import GpuReading, LaunchSpec
from gpubot.providers.startup import vm_startup_script
from gpubot.providers.terraform.config import OPTIONAL_OUTPUTS, Shape, TerraformConfig
from gpubot.providers.terraform.runner import RunResult, Terraform
from gpubot.providers.terraform.workdirs import InitFailed, State, Workdirs, facts_of, read_state

__all__ = ["INCOMPLETE", "TerraformProvider"]

log = logging.getLogger(__name__)

INCOMPLETE = "incomplete"  # list_owned: the state holds resources, but the apply that made them never finished
PENDING = "pending"  # list_owned: this process is applying it right now
INIT_TIMEOUT_FLOOR = 600.0  # a first init may download provider plugins (the AWS one is hundreds of MB)
# A destroy is never cut shorter than this: a short `timeout` bounds how long a launch may try, not how long a
# clean-up may take to remove what is billing.
DESTROY_TIMEOUT_FLOOR = 60.0
APPLY = ["apply", "-auto-approve", "-input=false", "-json", "-lock-timeout=60s"]
REFRESH = ["apply", "-refresh-only", "-auto-approve", "-input=false", "-json", "-lock-timeout=10s"]
DESTROY = ["destroy", "-auto-approve", "-input=false", "-json", "-lock-timeout=60s"]
INIT = ["init", "-input=false", "-json", "-no-color"]


class TerraformProvider:
    """Provider adapter for a Terraform module (kind "terraform")."""

    kind = "terraform"

    def __init__(self, name: str, config: TerraformConfig, *, state_dir: Path,
                 environ: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.config = config
        self.state_dir, self.environ = state_dir, environ
        self._dirs = Workdirs(state_dir, name)
        self.terraform = Terraform(config.terraform, plugin_cache=self._dirs.plugin_cache,
                                    config_key=f"providers.{name}.terraform", environ=environ)
        self._timeout = config.timeout.total_seconds()
        self._slots = threading.BoundedSemaphore(config.parallel)
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._launching: set[str] = set()

    # -- Provider protocol ---------------------------------------------------------------------------
    def offers(self, request: OfferRequest) -> list[Offer]:
        """One offer per configured region and shape that fits the request (always available: see the docstring)."""
        return [offer for region in self.config.regions if request.region in (None, region)
                for shape in self.config.shapes if (offer := self._offer(shape, region, request)) is not None]

    def launch(self, offer: Offer, spec: LaunchSpec) -> Instance:
        """`terraform apply` in the booking's working directory (at most `parallel` at once)."""
        secrets = [spec.agent.token] if spec.agent else []
        with self._slot(), self._booking(spec.name), self._applying(spec.name):
            workdir = self._workdir(offer, spec)
            result = self.terraform.run(APPLY, workdir, self._timeout, label=spec.name, secrets=secrets)
            try:
                return self._applied(result, offer, spec.name, workdir)
            except ProviderError:
                self._clean_up(spec.name, workdir, secrets)
                raise

    def describe(self, instance: Instance) -> Instance:
        """Refresh the booking's state (`apply -refresh-only`) and read its outputs; no state left: terminated."""
        with self._booking(instance.name):
            workdir = self._dirs.find(instance.name)
            if workdir is None or not read_state(workdir).resources:
                return replace(instance, status="terminated", ready=False, ssh=None)
            result = self.terraform.run(REFRESH, workdir, self._timeout, label=instance.name)
            if not result.ok:
                raise Transient(self.name, f"refresh of {instance.name} failed: {result.first_problem()}")
            return self._read(instance.name, workdir, read_state(workdir))

    def terminate(self, instance: Instance) -> None:
        """`terraform destroy`; the working directory goes once its state holds nothing (safe to call twice)."""
        with self._booking(instance.name):
            workdir = self._dirs.find(instance.name)
            if workdir is not None:
                self._destroy(instance.name, workdir)

    def list_owned(self) -> list[Instance]:
        """Every working directory whose state holds resources, read from disk (no Terraform run)."""
        owned = []
        for name in self._dirs.names():
            workdir = self._dirs.find(name)
            state = read_state(workdir) if workdir is not None else State(0, {})
            if workdir is not None and state.resources:
                instance = self._read(name, workdir, state)
                owned.append(replace(instance, status=PENDING) if name in self._launching else instance)
        return owned

    def telemetry(self, instance: Instance) -> list[GpuReading]:
        """Always empty: a Terraform module has no GPU metrics (gpubot's agent on the machine pushes them)."""
        return []

    # -- offers and launch ----------------------------------------------------------------------------
    def _offer(self, shape: Shape, region: str, request: OfferRequest) -> Offer | None:
        if shape.gpu != request.gpu or shape.count != request.count:
            return None
        price = shape.spot_price if request.spot else shape.price
        if price is None:
            return None
        return Offer(self.name, region, shape.gpu, shape.count, price / shape.count, self.config.currency,
                     spot=request.spot, available=True, ref=f"{shape.gpu}x{shape.count}")

    def _workdir(self, offer: Offer, spec: LaunchSpec) -> Path:
        """The booking's working directory, made from the module's current version (initialised once)."""
        try:
            version = self._dirs.prepared(self.config.module_path(), self._init)
        except InitFailed as exc:
            raise ProviderError(self.name, f"terraform init: {exc.result.first_problem()}") from exc
        except ConfigError as exc:
            raise InvalidRequest(self.name, str(exc)) from exc
        facts = {"provider": self.name, "booking_id": spec.booking_id, "name": spec.name, "region": offer.region,
                 "gpu": offer.gpu, "count": offer.count, "spot": offer.spot}
        return self._dirs.create(spec.name, version, self._variables(offer, spec), facts)

    def _init(self, directory: Path) -> RunResult:
        return self.terraform.run(INIT, directory, max(self._timeout, INIT_TIMEOUT_FLOOR), label=directory.name)

    def _variables(self, offer: Offer, spec: LaunchSpec) -> dict[str, Any]:
        """`[providers.X] vars` and gpubot's own variables (config.GPUBOT_VARIABLES)."""
        script = vm_startup_script(replace(spec, start_command=spec.start_command or self.config.start_command))
        return {**self.config.vars, "booking_id": spec.booking_id, "name": spec.name, "gpu": offer.gpu,
                "gpu_count": offer.count, "region": offer.region, "spot": offer.spot,
                "startup_script": script or "", "ssh_public_key": spec.ssh_public_key or ""}

    def _applied(self, result: RunResult, offer: Offer, name: str, workdir: Path) -> Instance:
        """The instance an apply made; the apply's failure as our error."""
        if not result.ok:
            raise self._launch_error(result, offer)
        instance = self._read(name, workdir, read_state(workdir))
        if not instance.instance_id:
            raise InvalidRequest(self.name, "the module's apply succeeded without an `instance_id` output")
        return instance

    def _launch_error(self, result: RunResult, offer: Offer) -> ProviderError:
        problem = result.first_problem()
        if result.timed_out:
            return Transient(self.name, f"apply stopped after {self._timeout:.0f} s: {problem}")
        if result.returncode is None:
            return Transient(self.name, f"terraform was killed during the apply: {problem}")
        if result.mentions(self.config.capacity_markers()):
            return NoCapacity(self.name, problem, scope="offer", region=offer.region)
        return ProviderError(self.name, problem)

    def _clean_up(self, name: str, workdir: Path, secrets: list[str]) -> None:
        """Destroy what a failed apply left; when that fails too, the directory stays for reconciliation."""
        try:
            self._destroy(name, workdir, secrets)
        except Transient as exc:
            log.warning("%s: %s", self.name, exc)

    def _destroy(self, name: str, workdir: Path, secrets: list[str] | None = None) -> None:
        if read_state(workdir).resources:
            timeout = max(self._timeout, DESTROY_TIMEOUT_FLOOR)
            result = self.terraform.run(DESTROY, workdir, timeout, label=name, secrets=secrets or [])
            if not result.ok or read_state(workdir).resources:
                raise Transient(self.name, f"destroy of {name} failed (its working directory is kept): "
                                           f"{result.first_problem()}")
        self._dirs.remove(name)

    # -- reading --------------------------------------------------------------------------------------
    def _read(self, name: str, workdir: Path, state: State) -> Instance:
        """The instance a working directory's state describes."""
        facts = facts_of(workdir)
        base = Instance(self.name, str(state.outputs.get("instance_id") or ""), name, facts.get("region", ""),
                        gpu=facts.get("gpu", ""), count=int(facts.get("count") or 0), extra={"workdir": str(workdir)})
        if not state.resources:
            return replace(base, status="terminated")
        if not base.instance_id:
            return replace(base, status=INCOMPLETE)
        try:
            ssh = ssh_line(state.outputs)
        except ValueError as exc:
            raise InvalidRequest(self.name, f"output ssh_port of {name} is not a port number: {exc}") from exc
        return replace(base, status="running" if ssh else "booting", ready=ssh is not None, ssh=ssh)

    # -- concurrency ----------------------------------------------------------------------------------
    @contextmanager
    def _slot(self) -> Iterator[None]:
        """One of the `parallel` apply slots, waited for at most one timeout."""
        if not self._slots.acquire(timeout=self._timeout):
            raise RateLimited(self.name, f"{self.config.parallel} applies already running", retry_after=30.0)
        try:
            yield
        finally:
            self._slots.release()

    @contextmanager
    def _booking(self, name: str) -> Iterator[None]:
        """One Terraform command at a time per booking in this process (Terraform's state lock covers others)."""
        with self._guard:
            lock = self._locks.setdefault(name, threading.Lock())
        with lock:
            yield

    @contextmanager
    def _applying(self, name: str) -> Iterator[None]:
        with self._guard:
            self._launching.add(name)
        try:
            yield
        finally:
            with self._guard:
                self._launching.discard(name)


def ssh_line(outputs: dict[str, Any]) -> str | None:
    """`ssh user@host [-p port]` once the outputs say the machine is reachable, else None."""
    host = str(outputs.get("ssh_host") or "")
    ready = outputs.get("ready")
    if not host or ready in (False, "false"):
        return None
    user = str(outputs.get("ssh_user") or OPTIONAL_OUTPUTS["ssh_user"])
    port = int(outputs.get("ssh_port") or OPTIONAL_OUTPUTS["ssh_port"])
    return f"ssh {user}@{host}" + ("" if port == 22 else f" -p {port}")
