"""`[providers.NAME]` with `kind = "slurm"`: the team's own Slurm cluster, validated.

    [providers.lab]
    kind = "slurm"
    partition = "gpu"
    gpu_types = { a100 = "a100", h100 = "h100" }   # gpubot GPU name -> the cluster's gres type
    prices = { a100 = 0.90, h100 = 1.80 }           # internal chargeback per GPU-hour (0 allowed)
    account = "ml-team"                             # optional, as --account; qos likewise
    users = { U0ALICE001 = "alice" }                # Slack user -> cluster user

GPU names are read through the catalog (`A100` and `a100-40gb` are `a100`); every mapped type needs a price, so
that no GPU is free by omission. Names given to Slurm (partition, account, qos, gres types, users) are checked
against the characters Slurm and POSIX allow, so that nothing in the policy file can pass as an option.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Annotated, Literal

from gpubot.domain.catalog import resolve_gpu
from gpubot.domain.errors import ConfigError
from gpubot.domain.policy import config_error
from gpubot.domain.policy_sections import Duration, ProviderPolicy
from pydantic import AfterValidator, Field, ValidationError, field_validator, model_validator

__all__ = ["SlurmConfig", "slurm_config"]


def _slurm_name(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", value):
        raise ValueError("a Slurm name (letters, digits, '_', '.', '-'; not starting with '-' or '.')")
    return value


def _user_name(value: str) -> str:
    if not re.fullmatch(r"[a-z_][a-z0-9_.-]*\$?", value) or len(value) > 32:
        raise ValueError("a POSIX user name such as 'alice' (lowercase letters, digits, '_', '.', '-')")
    return value


def _absolute_path(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError("an absolute path")
    return value


SlurmName = Annotated[str, AfterValidator(_slurm_name)]
UserName = Annotated[str, AfterValidator(_user_name)]
AbsolutePath = Annotated[str, AfterValidator(_absolute_path)]
Money = Annotated[Decimal, Field(ge=0)]


class SlurmConfig(ProviderPolicy):
    """A Slurm cluster as a provider: the common provider keys (`regions`: the names a booking's `region=` may use
    for this cluster; default: the partition), then the cluster's own."""

    kind: Literal["slurm"] = "slurm"
    partition: SlurmName
    gpu_types: dict[str, SlurmName] = Field(min_length=1)
    prices: dict[str, Money]
    account: SlurmName | None = None
    qos: SlurmName | None = None
    users: dict[str, UserName] = Field(default_factory=dict)
    slurm_conf: AbsolutePath | None = None  # else SLURM_CONF from gpubot's environment, else Slurm's default
    bin_dir: AbsolutePath | None = None  # where sbatch & co. are, when not on PATH
    command_timeout: Duration = timedelta(seconds=20)
    workdir: AbsolutePath = "/tmp"  # the job's working directory on the node: the user must be able to enter it
    ssh_jump: str | None = None  # a login node people go through: `ssh -J alice@login alice@gpunode1`

    @field_validator("gpu_types", "prices", mode="before")
    @classmethod
    def _catalog_names(cls, value: object) -> object:
        if not isinstance(value, dict):
            return value
        resolved = {}
        for name, item in value.items():
            key = resolve_gpu(str(name))
            if key is None:
                raise ValueError(f"{name!r} is not a GPU gpubot knows (see `/gpu prices`)")
            resolved[key] = item
        return resolved

    @model_validator(mode="after")
    def _every_type_priced(self) -> SlurmConfig:
        unpriced = sorted(set(self.gpu_types) - set(self.prices))
        if unpriced:
            raise ValueError(f"prices: no price for {', '.join(unpriced)} (0 is allowed, and must be said)")
        unmapped = sorted(set(self.prices) - set(self.gpu_types))
        if unmapped:
            raise ValueError(f"prices: {', '.join(unmapped)} is not in gpu_types")
        if self.command_timeout <= timedelta(0):
            raise ValueError("command_timeout: a duration longer than zero")
        return self

    @property
    def offer_region(self) -> str:
        """The region its offers carry: the first of `regions`, else the partition."""
        return self.regions[0] if self.regions else self.partition


def slurm_config(raw: dict, name: str) -> SlurmConfig:
    """`[providers.NAME]` read as a Slurm provider; a problem is a ConfigError naming the key."""
    try:
        return SlurmConfig.model_validate(raw)
    except ValidationError as exc:
        error = config_error(exc, f"providers.{name}")
        if error.key == f"providers.{name}":  # a whole-table check (model_validator): name the key it is about
            key, _, expected = error.expected.partition(": ")
            raise ConfigError(f"providers.{name}.{key}", raw.get(key), expected) from None
        raise error from None
