"""The team policy (gpubot.toml) as a validated schema, with every default in one place.

The schema uses pydantic so that a bad file is refused with the key, the bad value and what was expected.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from datetime import time, timedelta
from decimal import Decimal
from typing import Annotated, Literal, Protocol, get_args

from gpubot.domain.alerting import Damping
from gpubot.domain.cuda import cuda_version
from gpubot.domain.durations import format_duration, parse_duration
from gpubot.domain.errors import ConfigError
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    field_validator,
)

__all__ = ["Cuda", "Duration", "ImageProviderPolicy", "Money", "Policy", "ProviderKinds", "ProviderPolicy",
           "config_error", "config_errors", "policy_from_dict", "policy_problems", "rollup_interval",
           "telemetry_lookback"]


def _duration(value: object) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    return parse_duration(str(value))


Duration = Annotated[timedelta, BeforeValidator(_duration)]


def _cuda(value: object) -> str:
    text = str(value)
    cuda_version(text)
    return text


Cuda = Annotated[str, BeforeValidator(_cuda)]
Money = Annotated[Decimal, Field(ge=0)]


def _currency(value: object) -> object:
    if isinstance(value, str) and not (len(value) == 3 and value.isascii() and value.isalpha() and value.isupper()):
        raise ValueError(f"a three-letter ISO 4217 code in capitals, such as {value.upper()!r}"
                         if len(value) == 3 and value.isalpha() else "a three-letter ISO 4217 code such as 'USD'")
    return value


Currency = Annotated[str, BeforeValidator(_currency)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TeamPolicy(_Section):
    """[team]"""

    name: str = "ml-team"
    currency: Currency = "USD"
    timezone: str = "UTC"
    language: Literal["en", "zh"] = "en"  # the bot's language for people with no `/gpu lang` and no Slack locale
    admins: list[str] = []
    alerts_channel: str | None = None
    digest_channel: str | None = None
    digest_at: time = time(9, 0)
    oncall: list[str] = []

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError("an IANA time zone such as 'Europe/Berlin'") from exc
        return value


class BudgetPolicy(_Section):
    """[budget]"""

    monthly: Money = Decimal("5000")
    thresholds: list[Annotated[int, Field(gt=0, le=1000)]] = [50, 80, 100]
    forecast_alert: bool = True
    over_budget: Literal["warn", "approve", "block"] = "approve"
    users: dict[str, Money] = {}
    projects: dict[str, Money] = {}


class BookingPolicy(_Section):
    """[booking]"""

    default_duration: Duration = timedelta(hours=4)
    max_duration: Duration = timedelta(hours=72)
    expiry_reminders: list[Duration] = [timedelta(minutes=30), timedelta(minutes=15), timedelta(minutes=5)]
    max_gpus_per_user: Annotated[int, Field(gt=0)] = 16
    night_start: time = time(23, 0)
    night_end: time = time(9, 0)
    default_cuda: Cuda | None = None
    default_image: str | None = None
    watch_for: Duration = timedelta(hours=6)


class AcquirePolicy(_Section):
    """[acquire]"""

    strategy: Literal["cheapest", "ordered"] = "cheapest"
    order: list[str] = []  # provider names or kinds; policy_from_dict fills in the kinds' default order
    poll_every: Duration = timedelta(seconds=30)
    backoff_max: Duration = timedelta(seconds=60)
    give_up_after: Duration = timedelta(hours=4)
    probe_timeout: Duration = timedelta(seconds=10)
    offer_cache: Duration = timedelta(seconds=20)
    ready_timeout: Duration = timedelta(minutes=15)
    # How long a job may wait in a provider's own queue (a pending Slurm job) before it is cancelled and the
    # providers after it are tried (only when one has the GPUs free now: else it keeps its place); None: it waits
    # like any booting machine, up to queue_timeout.
    burst_after: Duration | None = None
    # How long a job may wait in a provider's own queue with a reason (a pending Slurm job: not a hung boot, so
    # ready_timeout does not apply to it) before it is cancelled and the booking goes on (the next offer, or
    # gpubot's queue); counted from the submit.
    queue_timeout: Duration = timedelta(hours=4)
    ready_poll_every: Duration = timedelta(seconds=5)
    ready_poll_max: Duration = timedelta(seconds=30)
    lease: Duration = timedelta(minutes=5)
    # A booking whose cheapest acceptable offer is taken but expected free within this (counted from its request)
    # waits in the queue for it rather than take a dearer free one now (domain.cheaper); None: never waits.
    wait_for_cheaper: Duration | None = None


class IdlePolicy(_Section):
    """[idle]"""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    util_below: Annotated[float, Field(ge=0, le=100)] = 15
    for_: Duration = Field(default=timedelta(minutes=10), alias="for")
    grace: Duration = timedelta(minutes=30)
    action: Literal["release", "remind"] = "release"
    # a GPU that no compute process has held for this long is reminded sooner than the utilisation rule
    no_process_for: Duration = timedelta(minutes=5)
    no_process_grace: Duration = timedelta(minutes=10)


class HealthPolicy(_Section):
    """[health]"""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    max_temp_c: Annotated[float, Field(gt=0, le=150)] = 85
    telemetry_stale_after: Duration = timedelta(minutes=5)
    replace_grace: Duration = timedelta(minutes=30)
    # Damping (domain.alerting): above max_temp_c for `for` opens; below max_temp_c - hysteresis_c for
    # `resolve_for` resolves, never sooner than `min_open` after opening; a booking pages at most
    # `max_pages_per_hour` times an hour, further crossings are folded into its open alert.
    for_: Duration = Field(default=timedelta(minutes=1), alias="for")
    hysteresis_c: Annotated[float, Field(ge=0, le=50)] = 5
    resolve_for: Duration = timedelta(minutes=2)
    min_open: Duration = timedelta(minutes=10)
    max_pages_per_hour: Annotated[int, Field(ge=1, le=1000)] = 4
    # Each agent token may push this many batches per agent interval on average (twice that at once); more is
    # answered 429 with Retry-After, which the agent honours.
    pushes_per_interval: Annotated[float, Field(gt=0, le=1000)] = 4

    def damping(self) -> Damping:
        """The overheat alert's damping."""
        return Damping(self.for_, self.hysteresis_c, self.resolve_for, self.min_open, self.max_pages_per_hour)


class SpotPolicy(_Section):
    """[spot]: what happens when a provider takes back (preempts) a running machine, and when a spot booking that
    finds no spot capacity launches on demand instead."""

    on_preempt: Literal["requeue", "notify"] = "requeue"
    min_remaining: Duration = timedelta(minutes=10)  # less left than this is not booked again
    # Unset: 3× the expected wait for its GPU at that hour, at least 30 min, 1 h without history (domain.spot).
    fallback_after: Duration | None = None


class SchedulerPolicy(_Section):
    """[scheduler]"""

    tick: Duration = timedelta(seconds=5)
    reconcile_every: Duration = timedelta(minutes=5)


class RetentionPolicy(_Section):
    """[retention]: how long finished rows that only grow are kept; the ledger (bookings, usage, attempts) is kept
    for ever."""

    notices: Duration = timedelta(days=7)  # delivered or failed outbox rows
    telemetry: Duration = timedelta(days=7)  # GPU telemetry; at least what the idle and health checks read
    # Samples older than what the idle and health checks read are rolled up into one row per booking, GPU and
    # this interval (min/mean/max utilisation, max temperature, mean memory, min/max processes); at most
    # health.telemetry_stale_after, so a rolled-up interval still reads as one unbroken stretch of telemetry.
    # Unset: 5 minutes, or the longest interval dividing a day within telemetry_stale_after when that is shorter
    # (`rollup_interval`).
    telemetry_rollup: Duration | None = None
    # Below this much free space on a SQLite ledger's disk, telemetry is refused (503, reason disk_low) so that
    # booking, release and billing keep the room.
    min_free_disk_mb: Annotated[int, Field(ge=0)] = 1024


class Discount(_Section):
    """A pricing tier: `percent` off for the part of continuous use beyond `after`."""

    after: Duration
    percent: Annotated[Decimal, Field(gt=0, le=100)]


class ProviderPolicy(_Section):
    """[providers.NAME]: the keys every kind has. A kind's own model (`providers/<kind>/config.py`) extends this
    one with the keys of that kind, and `policy_from_dict` validates each table against the model of its `kind`."""

    kind: str
    enabled: bool = True
    regions: list[str] = []
    currency: Currency = "USD"
    prices: dict[str, Money] = {}
    prices_as_of: str | None = None
    discounts: list[Discount] = []
    max_cuda: Cuda | None = None  # highest CUDA its machines run, when the vendor does not say per offer
    start_command: str | None = None  # a shell command, run beside the telemetry agent (providers.startup)

    @field_validator("start_command")
    @classmethod
    def _shell_command(cls, value: str | None) -> str | None:
        if value is not None and value.lstrip().startswith("#cloud-config"):
            raise ValueError("a shell command, not #cloud-config (gpubot writes the cloud-init user data itself "
                             "and runs this command from it)")
        return value

    def image_for(self, region: str) -> str | None:
        """The image its machines boot in `region` when a booking names none (None: the kind takes no image)."""
        return None


class ImageProviderPolicy(ProviderPolicy):
    """The common keys and `image`/`images`, for kinds whose machines boot an image (a container or a VM)."""

    image: str | None = None
    images: dict[str, str] = {}  # region → image (an AMI per region on AWS)

    def image_for(self, region: str) -> str | None:
        """The region's image, else the provider's image."""
        return self.images.get(region) or self.image


class ProviderKinds(Protocol):
    """The provider kinds the policy may name (`providers.registry` fills it; the domain imports no adapter)."""

    def config_model(self, kind: str) -> type[ProviderPolicy] | None:
        """The model of a `[providers.NAME]` table of `kind`, or None when there is no such kind."""

    def default_order(self) -> list[str]:
        """Every kind, in the default `[acquire] order`."""


class Policy(_Section):
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
    providers: dict[str, SerializeAsAny[ProviderPolicy]] = {}  # each of its kind's model
    fx: dict[str, Annotated[Decimal, Field(gt=0)]] = {}

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


def _known_keys(model: type[BaseModel], seen: set | None = None) -> set[str]:
    """Every key (field name and alias) of `model` and the models it nests, for "did you mean"."""
    seen = seen if seen is not None else set()
    if model in seen:
        return set()
    seen.add(model)
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        keys |= {name, info.alias} - {None}
        for nested in _models_in(info.annotation):
            keys |= _known_keys(nested, seen)
    return keys


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
