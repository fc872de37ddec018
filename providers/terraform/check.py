"""check-config for a `terraform` provider: which Terraform runs, its version, and whether the module is valid.

The module's current version is initialised the way a launch would (providers.terraform.workdirs, so the first
launch finds it ready), then `terraform validate` runs on it. Validation needs the module's provider plugins:
where they cannot be installed, init fails, and that is reported as the problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gpubot.domain.errors import ConfigError
from gpubot.providers.terraform.adapter import INIT, INIT_TIMEOUT_FLOOR
from gpubot.providers.terraform.config import TerraformConfig
from gpubot.providers.terraform.runner import Terraform, diagnostic_from, json_document
from gpubot.providers.terraform.workdirs import InitFailed, Workdirs

__all__ = ["ModuleCheck", "check_module"]


@dataclass(frozen=True)
class ModuleCheck:
    """What check-config says of a terraform provider: the Terraform found, and the module's first problem."""

    terraform: str
    version: str
    problem: str | None = None

    @property
    def usable(self) -> bool:
        """True when the module initialised and validated."""
        return self.problem is None

    def summary(self) -> str:
        """One line for check-config."""
        found = f"Terraform {self.version or '?'} ({self.terraform})"
        return f"{found}, module valid" if self.usable else f"{found}: {self.problem}"


def check_module(name: str, config: TerraformConfig, state_dir: Path,
                 environ: Mapping[str, str] | None = None) -> ModuleCheck:
    """Find Terraform, then initialise and validate the provider's module."""
    dirs = Workdirs(state_dir, name)
    try:
        terraform = Terraform(config.terraform, plugin_cache=dirs.plugin_cache,
                              config_key=f"providers.{name}.terraform", environ=environ)
    except ConfigError as exc:
        return ModuleCheck("none", "", str(exc))
    try:
        version = terraform.version()
    except ConfigError as exc:
        return ModuleCheck(terraform.describe(), "", str(exc))
    timeout = config.timeout.total_seconds()
    try:
        prepared = dirs.prepared(config.module_path(), lambda directory: terraform.run(
            INIT, directory, max(timeout, INIT_TIMEOUT_FLOOR), label=f"{name} init"))
    except InitFailed as exc:
        return ModuleCheck(terraform.describe(), version, f"terraform init: {exc.result.first_problem()}")
    except ConfigError as exc:
        return ModuleCheck(terraform.describe(), version, str(exc))
    return ModuleCheck(terraform.describe(), version, _validate(terraform, prepared, timeout, name))


def _validate(terraform: Terraform, directory: Path, timeout: float, name: str) -> str | None:
    """`terraform validate`'s first error, or None when the module is valid."""
    result = terraform.run(["validate", "-json", "-no-color"], directory, timeout, label=f"{name} validate")
    try:
        answer = json_document(result)
    except ValueError:
        return f"terraform validate: {result.first_problem()}"
    if answer.get("valid"):
        return None
    errors = [diagnostic_from(d) for d in answer.get("diagnostics", []) if d.get("severity") == "error"]
    useful = [d for d in errors if d.detail] or errors
    return f"terraform validate: {useful[0].text() if useful else result.first_problem()}"
