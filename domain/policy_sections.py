"""The tables of the team policy (gpubot.toml) as pydantic models, each key with its default, and the value
types they share with the providers' own tables (durations, CUDA versions, money, currencies).

`domain.policy` puts them together into `Policy` and validates a whole file.
"""

from __future__ import annotations

from datetime import time, timedelta
from decimal import Decimal
from typing import Annotated, Literal

from gpubot.domain.alerting import Damping
from gpubot.domain.cuda import cuda_version
from gpubot.domain.durations import parse_duration
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

__all__ = ["AcquirePolicy", "BookingPolicy", "BudgetPolicy", "Cuda", "Currency", "Discount", "Duration",
           "HealthPolicy", "IdlePolicy", "ImageProviderPolicy", "Money", "ProviderPolicy", "RetentionPolicy",
           "SchedulerPolicy", "Section", "SpotPolicy", "TeamPolicy"]


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


class Section(BaseModel):
    """The base of every table: unknown keys are refused, and a validated table is frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class TeamPolicy(Section):
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


class BudgetPolicy(Section):
    """[budget]"""

    monthly: Money = Decimal("5000")
    thresholds: list[Annotated[int, Field(gt=0, le=1000)]] = [50, 80, 100]
    forecast_alert: bool = True
    over_budget: Literal["warn", "approve", "block"] = "approve"
    users: dict[str, Money] = {}
    projects: dict[str, Money] = {}


class BookingPolicy(Section):
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


class AcquirePolicy(Section):
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


class IdlePolicy(Section):
    """[idle]"""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    util_below: Annotated[float, Field(ge=0, le=100)] = 15
    for_: Duration = Field(default=timedelta(minutes=10), alias="for")
    grace: Duration = timedelta(minutes=30)
    action: Literal["release", "remind"] = "release"
    # a GPU that no compute process has held for this long is reminded sooner than the utilisation rule
    no_process_for: Duration = timedelta(minutes=5)
    no_process_grace: Duration = timedelta(minutes=10)


class HealthPolicy(Section):
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


class SpotPolicy(Section):
    """[spot]: what happens when a provider takes back (preempts) a running machine, and when a spot booking that
    finds no spot capacity launches on demand instead."""

    on_preempt: Literal["requeue", "notify"] = "requeue"
    min_remaining: Duration = timedelta(minutes=10)  # less left than this is not booked again
    # Unset: 3× the expected wait for its GPU at that hour, at least 30 min, 1 h without history (domain.spot).
    fallback_after: Duration | None = None


class SchedulerPolicy(Section):
    """[scheduler]"""

    tick: Duration = timedelta(seconds=5)
    reconcile_every: Duration = timedelta(minutes=5)


class RetentionPolicy(Section):
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


class Discount(Section):
    """A pricing tier: `percent` off for the part of continuous use beyond `after`."""

    after: Duration
    percent: Annotated[Decimal, Field(gt=0, le=100)]


class ProviderPolicy(Section):
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
