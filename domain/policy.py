"""The team policy (gpubot.toml) as a validated schema, with every default in one place.

The schema uses pydantic so that a bad file is refused with the key, the bad value and what was expected. Its
tables are in `domain.policy_sections`; here they are put together, checked against each other, and a pydantic
error becomes a ConfigError naming the key.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from datetime import timedelta
from decimal import Decimal
from typing import Annotated, Protocol, get_args

from gpubot.domain.durations import format_duration
from gpubot.domain.errors import ConfigError
from gpubot.domain.policy_sections import (
    AcquirePolicy,
    BookingPolicy,
    BudgetPolicy,
    HealthPolicy,
    IdlePolicy,
    ProviderPolicy,
    RetentionPolicy,
    SchedulerPolicy,
    Section,
    SpotPolicy,
    TeamPolicy,
)
from pydantic import BaseModel, Field, SerializeAsAny, ValidationError

__all__ = ["Policy", "ProviderKinds", "config_error", "config_errors", "policy_from_dict", "policy_problems",
           "rollup_interval", "telemetry_lookback"]


class ProviderKinds(Protocol):
    """The provider kinds the policy may name (`providers.registry` fills it; the domain imports no adapter)."""

    def config_model(self, kind: str) -> type[ProviderPolicy] | None:
        """The model of a `[providers.NAME]` table of `kind`, or None when there is no such kind."""

    def default_order(self) -> list[str]:
        """Every kind, in the default `[acquire] order`."""


class Policy(Section):
    """The whole team policy file."""

    team: TeamPolicy = TeamPolicy()
    budget: BudgetPolicy = BudgetPolicy()
    booking: BookingPolicy = BookingPolicy()
    acquire: AcquirePolicy = AcquirePolicy()
    idle: IdlePolicy = IdlePolicy()
    health: HealthPolicy = HealthPolicy()
    spot: SpotPolicy = SpotPolicy()
    scheduler: SchedulerPolicy = SchedulerPolicy()
    retention: RetentionPolicy = RetentionPolicy()
    providers: dict[str, SerializeAsAny[ProviderPolicy]] = Field(default_factory=dict)  # each of its kind's model
    fx: dict[str, Annotated[Decimal, Field(gt=0)]] = Field(default_factory=dict)

    def enabled_providers(self) -> dict[str, ProviderPolicy]:
        """Providers that are switched on, by name."""
        return {name: p for name, p in self.providers.items() if p.enabled}


def policy_from_dict(raw: dict, kinds: ProviderKinds) -> Policy:
    """Validate a parsed TOML document, each `[providers.NAME]` table against the model of its kind in `kinds`;
    a problem raises ConfigError naming the first bad key (`policy_problems` lists them all)."""
    policy, problems = _validated(raw, kinds)
    if problems:
        raise problems[0]
    assert policy is not None
    return policy


def policy_problems(raw: dict, kinds: ProviderKinds) -> list[ConfigError]:
    """Every problem of a parsed TOML document at once (each provider table, each section, the cross-checks)."""
    return _validated(raw, kinds)[1]


def _validated(raw: dict, kinds: ProviderKinds) -> tuple[Policy | None, list[ConfigError]]:
    problems: list[ConfigError] = []
    tables = raw.get("providers", {})
    providers: object = tables
    if isinstance(tables, Mapping):
        providers = {}
        for name, table in tables.items():
            if not isinstance(table, Mapping):
                providers[name] = table
                continue
            found = _provider_problems(f"providers.{name}", table, kinds)
            if isinstance(found, list):
                problems += found
            else:
                providers[name] = found
    document = {**raw, "providers": providers}
    if isinstance(acquire := raw.get("acquire", {}), Mapping) and "order" not in acquire:
        document["acquire"] = {**acquire, "order": kinds.default_order()}
    try:
        policy = Policy.model_validate(document)
    except ValidationError as exc:
        return None, problems + config_errors(exc)
    if problems:
        return None, problems
    problems = _currency_problems(policy) + _retention_problems(policy) + _acquire_problems(policy)
    return (None if problems else policy), problems


def _provider_problems(key: str, table: Mapping, kinds: ProviderKinds) -> ProviderPolicy | list[ConfigError]:
    """The validated table, or every problem in it."""
    kind = table.get("kind")
    model = kinds.config_model(kind) if isinstance(kind, str) else None
    if model is None:
        names = [repr(name) for name in kinds.default_order()]
        return [ConfigError(f"{key}.kind", kind if "kind" in table else "(missing)",
                            f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names))]
    try:
        return model.model_validate(table)
    except ValidationError as exc:
        return config_errors(exc, key, model)


DEFAULT_ROLLUP = timedelta(minutes=5)


def rollup_interval(policy: Policy) -> timedelta:
    """The roll-up interval: `retention.telemetry_rollup` when set, else 5 minutes or, when telemetry_stale_after
    is shorter, the longest whole number of seconds dividing a day within it."""
    if policy.retention.telemetry_rollup is not None:
        return policy.retention.telemetry_rollup
    limit = int(min(DEFAULT_ROLLUP, policy.health.telemetry_stale_after).total_seconds())
    return timedelta(seconds=max(s for s in range(1, max(limit, 1) + 1) if 86400 % s == 0))


def telemetry_lookback(policy: Policy) -> timedelta:
    """How far back the idle and health checks read samples: a whole idle (or no-process) window twice over,
    enough to judge staleness, and the health check's `for` or `resolve_for` window with staleness to spare."""
    health = policy.health
    return max(2 * policy.idle.for_, 2 * policy.idle.no_process_for, health.telemetry_stale_after,
               max(health.for_, health.resolve_for) + health.telemetry_stale_after)


def config_error(exc: ValidationError, table: str = "", model: type[BaseModel] = Policy) -> ConfigError:
    """The first problem pydantic found in a config document (or in its `table`, of `model`) as a ConfigError."""
    return config_errors(exc, table, model)[0]


def config_errors(exc: ValidationError, table: str = "", model: type[BaseModel] = Policy) -> list[ConfigError]:
    """Every problem pydantic found, each a ConfigError naming the key; an unknown key gets the nearest key that
    exists where it was written (never itself)."""
    return [_one_error(error, table, model) for error in exc.errors()]


def _one_error(error, table: str, model: type[BaseModel]) -> ConfigError:
    key = ".".join([*([table] if table else []), *(str(p) for p in error["loc"])]) or "(top level)"
    expected = error["msg"].removeprefix("Value error, ").removeprefix("Input should be ")
    if error["type"] == "extra_forbidden":
        bad = str(error["loc"][-1])
        known = sorted(_keys_at(model, error["loc"][:-1]) - {bad})
        guess = difflib.get_close_matches(bad, known, n=1, cutoff=0.6)
        hint = f"did you mean '{guess[0]}'? " if guess else ""
        expected = f"no such key ({hint}unknown key; see gpubot.example.toml for every key)"
    return ConfigError(key, error.get("input"), expected)


def _keys_at(model: type[BaseModel], path: tuple) -> set[str]:
    """The keys of the table at `path` inside `model` (list indexes and dict keys step into their items' model)."""
    models = [model]
    for step in path:
        stepped: list[type[BaseModel]] = []
        for current in models:
            info = next((i for n, i in current.model_fields.items() if step in (n, i.alias)), None)
            stepped += _models_in(info.annotation) if info is not None else []
        models = stepped or models  # a list index or a dict key (a provider's name) keeps the models reached so far
    return {key for m in models for name, info in m.model_fields.items() for key in (name, info.alias) if key}


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _currency_problems(policy: Policy) -> list[ConfigError]:
    return [ConfigError(f"providers.{name}.currency", provider.currency,
                        f"a currency with a rate in [fx] (team currency is {policy.team.currency})")
            for name, provider in policy.providers.items()
            if provider.currency != policy.team.currency and provider.currency not in policy.fx]


def _acquire_problems(policy: Policy) -> list[ConfigError]:
    """A booking can only wait for cheaper capacity for a while before it would give up waiting at all."""
    wait, give_up = policy.acquire.wait_for_cheaper, policy.acquire.give_up_after
    if wait is not None and not timedelta(0) < wait < give_up:
        return [ConfigError("acquire.wait_for_cheaper", format_duration(wait),
                            f"longer than 0s and shorter than acquire.give_up_after ({format_duration(give_up)}): "
                            "past it the booking takes the best free offer, before it gives up")]
    return []


MIN_NOTICE_RETENTION = timedelta(days=1)


def _retention_problems(policy: Policy) -> list[ConfigError]:
    """Samples must outlive the checks that read them, or housekeeping would make a busy GPU look silent; a notice's
    row is what keeps a retried cause from telling it twice, so it outlives the retries."""
    problems = []
    if policy.retention.notices < MIN_NOTICE_RETENTION:
        problems.append(ConfigError("retention.notices", format_duration(policy.retention.notices),
                                    f"at least {format_duration(MIN_NOTICE_RETENTION)} (a delivered notice's row "
                                    "keeps a retried cause from telling it twice)"))
    rollup, stale = policy.retention.telemetry_rollup, policy.health.telemetry_stale_after
    if rollup is not None and (not timedelta(seconds=1) <= rollup <= stale or (timedelta(days=1) % rollup)):
        problems.append(ConfigError("retention.telemetry_rollup", format_duration(rollup),
                                    f"a whole number of seconds dividing a day, from 1s to health.telemetry_stale_"
                                    f"after ({format_duration(stale)}): a rolled-up interval must still read as "
                                    "unbroken telemetry"))
    needed = telemetry_lookback(policy)
    if policy.retention.telemetry < needed:
        problems.append(ConfigError("retention.telemetry", format_duration(policy.retention.telemetry),
                                    f"at least {format_duration(needed)} (twice idle.for, at least "
                                    "health.telemetry_stale_after, and health.for or health.resolve_for beyond it: "
                                    "the idle and health checks read samples that far back)"))
    return problems
