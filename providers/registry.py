"""The provider kinds: each `providers/<kind>/` package declares one `ProviderKind`, and nothing else names it.

A kind joins by being a package under providers/ whose `__init__` sets `KIND = ProviderKind(...)`. The registry
imports every package under providers/ on first use (one without `KIND` is an error: a folder is a kind or is not
there). Wiring (`gpubot/wiring.py`), the policy loader (`policy_from_dict` below, behind `gpubot/config.py` and
`gpubot check-config`), the launch options (`[booking] default_image`), check-config's public-URL warning, the
ledger's costs and the replay read a kind's traits here.

The fields of an entry:

- `name`: the `kind = "…"` of a `[providers.NAME]` table (unique; the folder may be named otherwise:
  `lambda_cloud/` declares "lambda", a word Python keeps for itself).
- `config`: the pydantic model of its table. Extend `domain.policy.ProviderPolicy` (the keys every kind has: kind,
  enabled, regions, currency, prices, prices_as_of, discounts, max_cuda, start_command) or `ImageProviderPolicy`
  (those and image, images) with the kind's own keys and validators, and pin `kind: Literal["<name>"] =
  "<name>"`. `extra="forbid"` is inherited: a misspelt key is refused naming the key, the bad value and what was
  expected, and "did you mean" offers only keys of that kind.
- `build(name, config, context) -> Provider`: the adapter of one configured provider. `context` (`BuildContext`)
  carries what wiring supplies: `read_settings` (the kind's environment variables, see `settings`), the `pacer`
  replicas share, the `machines` store and the `slots` of team-owned machines, and the `clock` and `sleep` a replay
  runs on. When the provider cannot be used, raise LookupError with a reason a person can act on ("RUNPOD_API_KEY
  is not set", "boto3 is not installed (in gpubot's checkout: pip install '.[aws]')"): `gpubot check-config` prints
  it and the bot starts without that provider. Import vendor libraries inside `build`, so that a missing extra only
  disables the kind that needs it.
- `settings`: a `KindSettings` subclass with the kind's environment variables (secrets as SecretStr: they are
  redacted from logs), read from the environment and `.env` like gpubot's own; None when it reads none.
- `machine`: "container" (the image is the machine), "vm" (a virtual machine booting an image), or "host" (a
  machine that is simply there, such as the team's own).
- `rented`: its machines run outside the team's network and download the telemetry agent from GPUBOT_PUBLIC_URL
  (check-config warns when that address is local or not HTTPS).
- `default_image`: `[booking] default_image` applies when neither the booking nor the provider names an image.
- `order`: its place in the default `[acquire] order` (lower first; ties by name).
- `bills_while_queued`: whether its machines cost from the launch even while they wait in the provider's own queue
  (True: a cloud bills from the launch, booting included). False (the team's Slurm cluster: a pending job holds
  nothing): the bill and the booked time start when the machine starts running (domain.queued_billing), so a
  wait in its queue is neither billed nor taken from the booked time.
- `monthly_fees(config) -> [(host, fee per month)]`: set for team-owned machines with a fixed monthly cost. Their
  offers go first whatever the strategy, and the ledger bills the fees, split by GPU-seconds, to the bookings that
  used each machine. Such a kind names its instances `<host>/<instance name>`.
- `replay`: how it runs in `gpubot replay` (in-process, on the virtual clock); None: a replay refuses it.
- `check(provider) -> str`: check-config's closer look at a built provider (the Terraform it runs and whether its
  module validates; the Slurm partition as the cluster sees it): one line saying what it found, or LookupError
  with the problem, which makes the provider not usable in check-config's report. None: building it is the check.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, TypeVar

from gpubot.domain.policy import Policy
from gpubot.domain.policy import policy_from_dict as validate_policy
from gpubot.domain.policy import policy_problems as problems_of
from gpubot.domain.policy_sections import ProviderPolicy
from gpubot.domain.ports import MachineStore, Pacer, Provider
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["BuildContext", "GpuSlots", "KindSettings", "ProviderKind", "Replayable", "all_kinds", "build_provider",
           "forget_kinds", "kind_named", "policy_from_dict", "policy_problems", "required_secret", "secret_values"]

Settings = TypeVar("Settings", bound=BaseSettings)
Allocation = tuple[str, str, int]  # (host, instance name, GPUs held)
Claim = Callable[[str, int, int, str], bool]  # (host, its GPUs, GPUs wanted, instance name) -> claimed


class KindSettings(BaseSettings):
    """A kind's environment variables, read like gpubot's own settings (environment, then `.env`)."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore",
                                      case_sensitive=False, env_ignore_empty=True)


def _from_environment(model: type[Settings]) -> Settings:
    return model()


@dataclass(frozen=True)
class GpuSlots:
    """Who holds the GPUs of team-owned machines, as the ledger knows it: `held(provider)` lists the allocations;
    `claim(provider)` (when given) is that provider's claim, safe across processes; `release` frees an instance's."""

    held: Callable[[str], list[Allocation]]
    claim: Callable[[str], Claim] | None = None
    release: Callable[[str], None] | None = None


@dataclass(frozen=True)
class BuildContext:
    """What wiring hands a kind's `build` besides the provider's name and table."""

    read_settings: Callable[[type[Settings]], Settings] = _from_environment
    pacer: Pacer | None = None  # spaces rate-limited calls across replicas (None: each adapter paces itself)
    machines: MachineStore | None = None  # where in-process clouds keep machines across restarts (None: memory)
    slots: GpuSlots | None = None
    clock: Callable[[], float] = time.time  # epoch seconds (a replay's virtual clock)
    sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True)
class Replayable:
    """How a kind runs in `gpubot replay`, which never calls a vendor: in-process, on the virtual clock."""

    sells: Callable[[Any], set[str]]  # the GPU types a provider of this kind sells (its validated table)
    quiet: Mapping[str, object] = field(default_factory=dict)  # keys that leave GPU load to the trace
    sells_spot: Callable[[Mapping], bool] = lambda table: False  # whether a (raw) table sells spot
    # The keys that make a (raw) table's spot machines be taken back at `rate` per machine-hour; none when the
    # table sets its own rate, or the kind has no such key.
    interrupt: Callable[[Mapping, float], dict] = lambda table, rate: {}
    # Its GPUs for the replay's lower bound: (place, GPU type, count, price per GPU-hour or None when paid by the
    # month, spot price or None) in the provider's currency, from its validated table.
    stock: Callable[[Any], list[tuple[str, str, int, Decimal | None, Decimal | None]]] = lambda config: []


@dataclass(frozen=True)
class ProviderKind:
    """One kind of provider and its traits (the module docstring says what each field means)."""

    name: str
    config: type[ProviderPolicy]
    build: Callable[[str, Any, BuildContext], Provider]
    machine: Literal["container", "vm", "host"]
    rented: bool
    default_image: bool
    order: int
    settings: type[KindSettings] | None = None
    monthly_fees: Callable[[Any], list[tuple[str, Decimal]]] | None = None
    replay: Replayable | None = None
    check: Callable[[Provider], str] | None = None
    bills_while_queued: bool = True

    @property
    def team_owned(self) -> bool:
        """Machines the team owns or rents by the month: already paid for."""
        return self.monthly_fees is not None


@functools.cache
def _discovered() -> dict[str, ProviderKind]:
    import gpubot.providers as package

    found: dict[str, ProviderKind] = {}
    for module in pkgutil.iter_modules(package.__path__):
        if not module.ispkg:
            continue
        entry = getattr(importlib.import_module(f"{package.__name__}.{module.name}"), "KIND", None)
        if not isinstance(entry, ProviderKind):
            raise TypeError(f"providers/{module.name}/__init__.py declares no KIND = ProviderKind(...)")
        if entry.name in found:
            raise TypeError(f"providers/{module.name}: kind {entry.name!r} is declared twice")
        found[entry.name] = entry
    return dict(sorted(found.items(), key=lambda item: (item[1].order, item[0])))


def all_kinds() -> dict[str, ProviderKind]:
    """Every kind under providers/, by name, in the default acquire order."""
    return dict(_discovered())


def kind_named(name: object) -> ProviderKind | None:
    """The kind called `name`, or None (not a kind, or not a string)."""
    return _discovered().get(name) if isinstance(name, str) else None


def build_provider(name: str, config: ProviderPolicy, context: BuildContext) -> Provider:
    """The adapter of one configured provider, built by its kind; LookupError saying why it cannot be used."""
    entry = kind_named(config.kind)
    if entry is None:
        raise LookupError(f"no provider kind {config.kind!r} (no providers/<kind>/ declares it)")
    return entry.build(name, config, context)


def forget_kinds() -> None:
    """Look again on next use (a test that adds a kind's folder)."""
    _discovered.cache_clear()


class _Kinds:
    """The registry as the domain's ProviderKinds port."""

    def config_model(self, kind: str) -> type[ProviderPolicy] | None:
        """The model of `kind`'s tables, or None."""
        entry = kind_named(kind)
        return entry.config if entry else None

    def default_order(self) -> list[str]:
        """Every kind, in the default acquire order."""
        return list(_discovered())


def policy_from_dict(raw: dict) -> Policy:
    """The team policy from a parsed TOML document, each provider table checked against its kind's model."""
    return validate_policy(raw, _Kinds())


def policy_problems(raw: dict) -> list:
    """Every problem of a parsed TOML document at once (ConfigErrors), each provider table against its kind."""
    return problems_of(raw, _Kinds())


def required_secret(settings: BaseSettings, field_name: str) -> str:
    """A secret setting's value; LookupError naming its environment variable when it is not set."""
    value = getattr(settings, field_name)
    if value is None or not value.get_secret_value():
        raise LookupError(f"{field_name.upper()} is not set")
    return value.get_secret_value()


def secret_values(read_settings: Callable[[type[Settings]], Settings] = _from_environment) -> list[str]:
    """Every secret a kind's settings hold, for redaction."""
    read = [read_settings(entry.settings) for entry in _discovered().values() if entry.settings]
    values = [getattr(settings, name) for settings in read for name in type(settings).model_fields]
    return [v.get_secret_value() for v in values if isinstance(v, SecretStr) and v.get_secret_value()]
